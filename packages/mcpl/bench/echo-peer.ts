// The baseline of the stdio bench: a bare NDJSON peer that parses each request line and writes
// back the answer an MCPL host gives to `channels/incoming`, with nothing else in between.
let buffer = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  buffer += chunk;
  let end = buffer.indexOf('\n');
  while (end !== -1) {
    const line = buffer.slice(0, end);
    buffer = buffer.slice(end + 1);
    const request = JSON.parse(line) as { id: number; params: { messages: { messageId: string }[] } };
    const results = request.params.messages.map((m) => ({ messageId: m.messageId, accepted: true }));
    process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { results } })}\n`);
    end = buffer.indexOf('\n');
  }
});
process.stdin.on('end', () => process.exit(0));
