import { describe, expect, it } from 'vitest';
import { formatElapsed, readProgressLine } from './progress.js';

// One line of each CLI's documented machine-readable output, as the real CLI prints it.
const claude = {
  init: '{"type":"system","subtype":"init","cwd":"/w","session_id":"5f0c","tools":["Bash","mcp__zulip__reply"],"mcp_servers":[{"name":"zulip","status":"connected"}],"model":"claude-sonnet-4-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.332","uuid":"u1"}',
  tool: '{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Looking at the logs.\\nThen more."},{"type":"tool_use","id":"toolu_01","name":"mcp__zulip__reply","input":{"content":"hi"}},{"type":"tool_use","id":"toolu_02","name":"Bash","input":{"command":"ls"}}],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"5f0c","uuid":"u2"}',
  subagent:
    '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_03","name":"Grep","input":{}}]},"parent_tool_use_id":"toolu_09","session_id":"5f0c"}',
  result:
    '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":[{"type":"text","text":"sent"}]}]},"parent_tool_use_id":null,"session_id":"5f0c"}',
  end: '{"type":"result","subtype":"success","is_error":false,"duration_ms":10,"num_turns":2,"result":"Done.","session_id":"5f0c","total_cost_usd":0}',
};
const codex = {
  thread: '{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}',
  mcp: '{"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"zulip","tool":"reply","arguments":{"content":"hi"},"result":null,"error":null,"status":"in_progress"}}',
  shell:
    '{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}',
  patch:
    '{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"a.ts","kind":"update"}],"status":"completed"}}',
  message: '{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"All green."}}',
  done: '{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}',
};
const opencode = {
  start:
    '{"type":"step_start","timestamp":1767036059338,"sessionID":"ses_49","part":{"id":"prt_1","sessionID":"ses_49","messageID":"msg_1","type":"step-start"}}',
  tool: '{"type":"tool_use","timestamp":1767036060000,"sessionID":"ses_49","part":{"id":"prt_2","type":"tool","callID":"c1","tool":"zulip_reply","state":{"status":"completed","input":{},"output":"sent","title":""}}}',
  text: '{"type":"text","timestamp":1767036061000,"sessionID":"ses_49","part":{"id":"prt_3","type":"text","text":"Done here."}}',
};

describe('readProgressLine', () => {
  it('reads Claude Code stream-json: text and tool_use blocks of the main agent, MCP tools as server.tool', () => {
    expect(readProgressLine('claude', claude.init)).toEqual([]);
    expect(readProgressLine('claude', claude.tool)).toEqual([
      { kind: 'text', text: 'Looking at the logs.\nThen more.' },
      { kind: 'tool', name: 'zulip.reply' },
      { kind: 'tool', name: 'Bash' },
    ]);
    expect(readProgressLine('claude', claude.subagent)).toEqual([]);
    expect(readProgressLine('claude', claude.result)).toEqual([]);
    expect(readProgressLine('claude', claude.end)).toEqual([]);
  });

  it('reads codex exec --json: commands, MCP calls, patches, messages', () => {
    expect(readProgressLine('codex', codex.thread)).toEqual([]);
    expect(readProgressLine('codex', codex.mcp)).toEqual([{ kind: 'tool', name: 'zulip.reply' }]);
    expect(readProgressLine('codex', codex.shell)).toEqual([{ kind: 'tool', name: 'shell' }]);
    expect(readProgressLine('codex', codex.patch)).toEqual([{ kind: 'tool', name: 'apply_patch' }]);
    expect(readProgressLine('codex', codex.message)).toEqual([{ kind: 'text', text: 'All green.' }]);
    expect(readProgressLine('codex', codex.done)).toEqual([]);
  });

  it('reads opencode run --format json: tool_use and text', () => {
    expect(readProgressLine('opencode', opencode.start)).toEqual([]);
    expect(readProgressLine('opencode', opencode.tool)).toEqual([{ kind: 'tool', name: 'zulip_reply' }]);
    expect(readProgressLine('opencode', opencode.text)).toEqual([{ kind: 'text', text: 'Done here.' }]);
  });

  it('ignores what is not one of its JSON events', () => {
    for (const line of ['', 'plain text', '{not json', '[1,2]', '{"type":"assistant","message":5}'])
      expect(readProgressLine('claude', line)).toEqual([]);
  });
});

describe('formatElapsed', () => {
  it.each([
    [0, '0s'],
    [59_999, '59s'],
    [75_000, '1m 15s'],
    [3_725_000, '1h 2m'],
  ])('%d ms → %s', (ms, text) => expect(formatElapsed(ms)).toBe(text));
});
