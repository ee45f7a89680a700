/**
 * What a model is told about the text tools return and the message lines in it, in one paragraph:
 * every server's instructions and the teammate prompt say it in these words. `serves(tool)` says
 * whether a tool is served; `fetch_history` and `fetch_around` are named as what an id is a cursor
 * for only when both are.
 */
export function describeMessageLines(serves: (tool: string) => boolean = () => true): string {
  const cursorFor =
    serves('fetch_history') && serves('fetch_around') ? ' for fetch_history and fetch_around' : '';
  return [
    'Tool results are text (some clients show it as the "text" field of a JSON object, beside a few typed fields such as ids and next_cursor).',
    'Message lines read [time id=N] [#stream > topic] Sender: body ([DM] for direct messages); a name holding a delimiter is "quoted", a person a name alone would not tell apart is followed by the user id, as Ann Lee (user 12), and a body\'s further lines are indented, so only a line that starts at the margin with "[" is a message.',
    `Ids are realm-global and increasing, so any id is a cursor${cursorFor}.`,
  ].join(' ');
}
