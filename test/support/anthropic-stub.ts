// A scripted stand-in for Anthropic's Messages API on loopback, for running the real Claude Code
// CLI with the model played by a test. Point `ANTHROPIC_BASE_URL` at `stub.url`.
//
// It answers as the API does: `POST /v1/messages` streamed (SSE: message_start, ping,
// content_block_start / _delta / _stop, message_delta, message_stop; text as text_delta, tool
// calls as tool_use blocks whose input arrives in input_json_delta pieces) or as one JSON message,
// `POST /v1/messages/count_tokens`, and errors in the API's `{"type":"error",...}` shape.
//
// The model's side is scripted, in either of two ways:
// - `script`, a list of turns: each request of the main conversation takes the next one, a
//   function that reads the request (the tool results Claude Code handed back, the tools it
//   offers) and returns text and/or tool calls;
// - or driven from the test: `await stub.next()` is the next main request, and
//   `await request.answer(turn)` answers it and resolves with the one after, so a test reads as
//   the conversation it plays, with the realm's events in between.
// Every request is recorded, so a test can assert what the model was handed. Requests that are
// not the main conversation (Claude Code's side queries) are answered by `side`, and never take a
// turn.
//
// The same port is also an HTTP proxy that refuses everything: give Claude Code
// `HTTPS_PROXY`/`HTTP_PROXY` = `stub.url` (with `NO_PROXY` for loopback) and any attempt to reach
// beyond loopback is recorded in `outbound` and refused, instead of hanging or leaving the machine.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One block of a message's content, as the API carries it (only the fields tests read are typed). */
export interface ContentBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | ContentBlock[];
  is_error?: boolean;
  [key: string]: unknown;
}

/** A message of the conversation, as Claude Code sends it. */
export interface ApiMessage {
  role: string;
  content: string | ContentBlock[];
}

/** A tool definition Claude Code offered the model. */
export interface ApiTool {
  name: string;
  description?: string;
  input_schema?: unknown;
  [key: string]: unknown;
}

/** The body of a `POST /v1/messages`. */
export interface MessagesBody {
  model: string;
  max_tokens: number;
  messages: ApiMessage[];
  system?: string | ContentBlock[];
  tools?: ApiTool[];
  stream?: boolean;
  [key: string]: unknown;
}

/** One HTTP request the stub received. */
export interface RecordedRequest {
  /** 0, 1, 2... in arrival order, over every path. */
  seq: number;
  method: string;
  path: string;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The parsed JSON body, or undefined when there was none (or it was not JSON). */
  body: MessagesBody | undefined;
  /** For a main-conversation `/v1/messages`: which turn of the script answered it (0-based). */
  turn?: number;
  /** What the stub answered, for `/v1/messages`. */
  answer?: ModelTurn;
}

/** A tool call the scripted model makes. */
export interface ToolCall {
  name: string;
  input: Record<string, unknown>;
  /** Defaults to a fresh `toolu_01...` id. */
  id?: string;
}

/** What the scripted model answers to one request. */
export interface ModelTurn {
  /** Text before the tool calls, if any. */
  text?: string;
  toolCalls?: ToolCall[];
  /** Defaults to `tool_use` when there are tool calls, else `end_turn`. */
  stopReason?: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence';
}

/** A tool result Claude Code handed back to the model, with the name of the tool that was called. */
export interface HandedResult {
  toolUseId: string;
  /** The tool's name, from the assistant turn that called it. */
  name: string | undefined;
  /** The result's text blocks, joined (the whole of it, when the content is a string). */
  text: string;
  isError: boolean;
  raw: ContentBlock;
}

/** A main-conversation request, as the script's turns see it. */
export class ModelRequest {
  readonly record: RecordedRequest;
  readonly body: MessagesBody;
  /** Which turn of the conversation this is (0-based). */
  readonly turn: number;
  readonly #respond: (turn: ModelTurn) => void;
  readonly #next: () => Promise<ModelRequest>;
  #answered = false;

  /** @internal Made by the stub for each main request. */
  constructor(
    record: RecordedRequest,
    turn: number,
    respond: (turn: ModelTurn) => void,
    next: () => Promise<ModelRequest>,
  ) {
    this.record = record;
    this.body = record.body as MessagesBody;
    this.turn = turn;
    this.#respond = respond;
    this.#next = next;
  }

  /** True once answered. */
  get answered(): boolean {
    return this.#answered;
  }

  /**
   * Answers this request (driven mode) and resolves with the next main request, once Claude Code
   * sends it (after it has run the tool calls, if any).
   */
  answer(turn: ModelTurn): Promise<ModelRequest> {
    if (this.#answered) throw new Error(`turn ${this.turn} was answered already`);
    this.#answered = true;
    this.#respond(turn);
    return this.#next();
  }

  /** The names of the tools offered with this request. */
  get toolNames(): string[] {
    return (this.body.tools ?? []).map((t) => t.name);
  }

  /** The system prompt, as one string. */
  get system(): string {
    const system = this.body.system;
    if (system === undefined) return '';
    return typeof system === 'string' ? system : system.map((b) => b.text ?? '').join('\n');
  }

  /** The tool results of the last user message (what the model is being handed now). */
  get results(): HandedResult[] {
    return handedResults(this.body.messages).filter((r) => this.#inLastUserMessage(r.raw));
  }

  /** Every tool result handed back so far in the conversation, oldest first. */
  get allResults(): HandedResult[] {
    return handedResults(this.body.messages);
  }

  /** The result of the last call of `name` handed back in this request; throws when there is none. */
  result(name: string): HandedResult {
    const found = this.results.filter((r) => r.name === name);
    const last = found[found.length - 1];
    if (last === undefined) {
      throw new Error(
        `the model was not handed a result of ${name}; it got ${JSON.stringify(this.results.map((r) => r.name))}`,
      );
    }
    return last;
  }

  /** Every text block of every user message, oldest first. */
  get userTexts(): string[] {
    return this.texts('user');
  }

  /**
   * Every text block of the messages of `role` (all roles when omitted), oldest first. Claude Code
   * 2.1.332 also sends `system` messages inside `messages` (its environment, the deferred tools).
   */
  texts(role?: string): string[] {
    const out: string[] = [];
    for (const m of this.body.messages) {
      if (role !== undefined && m.role !== role) continue;
      if (typeof m.content === 'string') out.push(m.content);
      else for (const b of m.content) if (b.type === 'text' && b.text !== undefined) out.push(b.text);
    }
    return out;
  }

  #inLastUserMessage(block: ContentBlock): boolean {
    const users = this.body.messages.filter((m) => m.role === 'user');
    const last = users[users.length - 1];
    return last !== undefined && Array.isArray(last.content) && last.content.includes(block);
  }
}

/** Every tool_result block of a conversation, with the name of the tool_use it answers. */
export function handedResults(messages: readonly ApiMessage[]): HandedResult[] {
  const names = new Map<string, string>();
  const out: HandedResult[] = [];
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type === 'tool_use' && b.id !== undefined && b.name !== undefined) names.set(b.id, b.name);
      if (b.type !== 'tool_result' || b.tool_use_id === undefined) continue;
      const text =
        typeof b.content === 'string'
          ? b.content
          : (b.content ?? [])
              .filter((c) => c.type === 'text')
              .map((c) => c.text ?? '')
              .join('\n');
      out.push({
        toolUseId: b.tool_use_id,
        name: names.get(b.tool_use_id),
        text,
        isError: b.is_error === true,
        raw: b,
      });
    }
  }
  return out;
}

/** One turn of the model: reads the request, answers. May wait (on the realm, say) before answering. */
export type ScriptTurn = (request: ModelRequest) => ModelTurn | Promise<ModelTurn>;

export interface AnthropicStubOptions {
  /** The main conversation's turns, in order. Without it, the test drives: see `next()`. */
  script?: ScriptTurn[];
  /**
   * Which `/v1/messages` requests belong to the main conversation (and take a turn). By default:
   * those that offer tools, as every request of Claude Code's agent loop does.
   */
  isMain?: (body: MessagesBody) => boolean;
  /** Answers a side request (not the main conversation). By default a short text. */
  side?: (body: MessagesBody) => ModelTurn;
}

export interface AnthropicStub {
  /** `http://127.0.0.1:<port>`: the base URL, and the refusing proxy. */
  readonly url: string;
  /** Every request, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** Main-conversation `/v1/messages` requests, in order. */
  readonly turns: readonly ModelRequest[];
  /** Attempts to reach beyond loopback through the proxy (`CONNECT host:port`, or an absolute URL). */
  readonly outbound: readonly string[];
  /** Requests the stub could not answer: unknown paths, bad bodies, a main request past the script. */
  readonly problems: readonly string[];
  /** The main-conversation request (already seen or still to come) with index `n`. */
  turn(n: number): Promise<ModelRequest>;
  /** Driven mode: the first main request not yet handed to the test by `next()`. */
  next(): Promise<ModelRequest>;
  /** With a `script`: resolves once its last turn has been answered. */
  readonly finished: Promise<void>;
  close(): Promise<void>;
}

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** An id shaped like the API's: `toolu_01` / `msg_01` / `req_01` then 22 base62 characters. */
function apiId(prefix: string): string {
  const bytes = randomBytes(22);
  let out = `${prefix}_01`;
  for (const b of bytes) out += BASE62[b % 62];
  return out;
}

/** A rough token count: what the tests need is a plausible positive number. */
function estimateTokens(value: unknown): number {
  return Math.max(1, Math.ceil(JSON.stringify(value ?? '').length / 4));
}

/** Cuts a string into pieces of at most `size` code units, as the API streams text and JSON. */
function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function contentOf(turn: ModelTurn): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (turn.text !== undefined && turn.text !== '') blocks.push({ type: 'text', text: turn.text });
  for (const call of turn.toolCalls ?? []) {
    blocks.push({ type: 'tool_use', id: call.id ?? apiId('toolu'), name: call.name, input: call.input });
  }
  return blocks;
}

function stopReasonOf(turn: ModelTurn): string {
  return turn.stopReason ?? ((turn.toolCalls ?? []).length > 0 ? 'tool_use' : 'end_turn');
}

/** An API error; `x-should-retry: false`, so the client gives up at once instead of backing off. */
function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'request-id': apiId('req'),
    'x-should-retry': 'false',
  });
  res.end(JSON.stringify({ type: 'error', error: { type, message }, request_id: apiId('req') }));
}

/** Writes a message as the API streams it. */
function stream(res: ServerResponse, body: MessagesBody, turn: ModelTurn, blocks: ContentBlock[]): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': apiId('req'),
  });
  const event = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  const inputTokens = estimateTokens(body.messages);
  event('message_start', {
    message: {
      id: apiId('msg'),
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: inputTokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 1,
        service_tier: 'standard',
      },
    },
  });
  event('ping', {});
  blocks.forEach((block, index) => {
    if (block.type === 'text') {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const text of pieces(block.text ?? '', 40))
        event('content_block_delta', { index, delta: { type: 'text_delta', text } });
    } else {
      event('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
      for (const partial_json of pieces(JSON.stringify(block.input), 24))
        event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } });
    }
    event('content_block_stop', { index });
  });
  event('message_delta', {
    delta: { stop_reason: stopReasonOf(turn), stop_sequence: null },
    usage: { output_tokens: estimateTokens(blocks) },
  });
  event('message_stop', {});
  res.end();
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Starts the stub on 127.0.0.1, port 0. */
export async function startAnthropicStub(options: AnthropicStubOptions): Promise<AnthropicStub> {
  const isMain = options.isMain ?? ((body) => (body.tools ?? []).length > 0);
  const side = options.side ?? (() => ({ text: 'OK.' }));
  const requests: RecordedRequest[] = [];
  const turns: ModelRequest[] = [];
  const outbound: string[] = [];
  const problems: string[] = [];
  const turnWaiters = new Map<number, ((r: ModelRequest) => void)[]>();
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  if (options.script?.length === 0) finish();

  let handed = 0;
  const turn = (n: number): Promise<ModelRequest> => {
    const seen = turns[n];
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => {
      turnWaiters.set(n, [...(turnWaiters.get(n) ?? []), resolve]);
    });
  };
  const next = (): Promise<ModelRequest> => turn(handed++);

  function respond(record: RecordedRequest, res: ServerResponse, answer: ModelTurn): void {
    const body = record.body as MessagesBody;
    record.answer = answer;
    const blocks = contentOf(answer);
    if (body.stream === true) {
      stream(res, body, answer, blocks);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'request-id': apiId('req') });
    res.end(
      JSON.stringify({
        id: apiId('msg'),
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: blocks,
        stop_reason: stopReasonOf(answer),
        stop_sequence: null,
        usage: {
          input_tokens: estimateTokens(body.messages),
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: estimateTokens(blocks),
          service_tier: 'standard',
        },
      }),
    );
  }

  async function answerMessages(record: RecordedRequest, res: ServerResponse): Promise<void> {
    const body = record.body;
    if (body === undefined || !Array.isArray(body.messages) || typeof body.model !== 'string') {
      problems.push(`request ${record.seq}: not a Messages API body`);
      return sendError(res, 400, 'invalid_request_error', 'messages: Field required');
    }
    if (!isMain(body)) return respond(record, res, side(body));
    const n = turns.length;
    record.turn = n;
    let settle!: (answer: ModelTurn) => void;
    const answered = new Promise<ModelTurn>((resolve) => {
      settle = resolve;
    });
    const request = new ModelRequest(record, n, settle, next);
    turns.push(request);
    for (const w of turnWaiters.get(n) ?? []) w(request);
    turnWaiters.delete(n);
    const script = options.script;
    if (script !== undefined) {
      const step = script[n];
      if (step === undefined) {
        problems.push(`request ${record.seq}: main turn ${n} is past the script's ${script.length}`);
        return sendError(res, 400, 'invalid_request_error', `The stub's script has no turn ${n}.`);
      }
      try {
        settle(await step(request));
      } catch (err) {
        problems.push(`turn ${n}: ${err instanceof Error ? err.message : String(err)}`);
        return sendError(res, 400, 'invalid_request_error', `The stub's turn ${n} threw.`);
      }
      if (n === script.length - 1) finish();
    }
    respond(record, res, await answered);
  }

  const server = createServer((req, res) => {
    req.socket.on('error', () => undefined);
    const url = req.url ?? '';
    if (!url.startsWith('/')) {
      // A proxy request for an absolute URL (plain http beyond loopback): refused.
      outbound.push(`${req.method} ${url}`);
      res.writeHead(403).end();
      req.resume();
      return;
    }
    void readBody(req).then(async (text) => {
      let body: MessagesBody | undefined;
      try {
        body = text === '' ? undefined : (JSON.parse(text) as MessagesBody);
      } catch {
        body = undefined;
      }
      const path = url.split('?')[0] ?? url;
      const record: RecordedRequest = {
        seq: requests.length,
        method: req.method ?? '',
        path,
        headers: req.headers,
        body,
      };
      requests.push(record);
      if (req.method === 'POST' && path === '/v1/messages') return answerMessages(record, res);
      if (req.method === 'POST' && path === '/v1/messages/count_tokens') {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': apiId('req') });
        res.end(
          JSON.stringify({ input_tokens: estimateTokens([body?.system, body?.tools, body?.messages]) }),
        );
        return;
      }
      problems.push(`request ${record.seq}: ${record.method} ${url} is not served`);
      sendError(res, 404, 'not_found_error', `Not found: ${record.method} ${path}`);
    });
  });
  // HTTPS through the proxy: refused, and recorded.
  server.on('connect', (req: IncomingMessage, socket) => {
    socket.on('error', () => undefined);
    outbound.push(`CONNECT ${req.url ?? ''}`);
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    turns,
    outbound,
    problems,
    finished,
    turn,
    next,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What stays the same from run to run of one Claude Code version: the shape of a request. */
export interface RequestShape {
  method: string;
  path: string;
  /** Header names, sorted, and the values that identify the client and the API it speaks. */
  headerNames: string[];
  headers: Record<string, string | string[]>;
  body: {
    keys: string[];
    model: unknown;
    max_tokens: unknown;
    stream: unknown;
    thinking: unknown;
    tools: string[];
    /** Each system block: its cache_control, and the first line of its text (the rest varies). */
    system: { firstLine: string; cache_control?: unknown }[];
    /** Each message: its role and the types of its blocks. */
    messages: { role: string; blocks: string[] }[];
  };
}

/**
 * The shape of a recorded `/v1/messages` request, for a fixture: header names, the client's
 * version and betas, the body's fields, the tool names, the system blocks and the roles and block
 * types of the messages. Texts, ids and paths, which vary from run to run, are left out.
 */
export function requestShape(record: RecordedRequest): RequestShape {
  const h = record.headers;
  const body = record.body as MessagesBody;
  const one = (name: string) => String(h[name] ?? '');
  const system =
    typeof body.system === 'string' ? [{ type: 'text', text: body.system }] : (body.system ?? []);
  return {
    method: record.method,
    path: record.path,
    headerNames: Object.keys(h).sort(),
    headers: {
      'anthropic-version': one('anthropic-version'),
      'anthropic-beta': one('anthropic-beta').split(','),
      'user-agent': one('user-agent'),
      'x-app': one('x-app'),
      'content-type': one('content-type'),
    },
    body: {
      keys: Object.keys(body).sort(),
      model: body.model,
      max_tokens: body.max_tokens,
      stream: body.stream,
      thinking: body.thinking,
      tools: (body.tools ?? []).map((t) => t.name),
      system: system.map((b) => ({
        firstLine: (b.text ?? '').split('\n')[0]?.replace(/cc_version=[^;]*/, 'cc_version=…') ?? '',
        ...(b.cache_control === undefined ? {} : { cache_control: b.cache_control }),
      })),
      messages: body.messages.map((m) => ({
        role: m.role,
        blocks: typeof m.content === 'string' ? ['string'] : m.content.map((b) => b.type),
      })),
    },
  };
}
