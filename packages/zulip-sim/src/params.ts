import { ApiError, badRequest } from './errors.js';

/** A file part of a multipart body. */
export interface UploadedFile {
  field: string;
  filename: string;
  contentType: string;
  data: Buffer;
}

/** A request's parameters as Zulip sees them: body first, then the query string. */
export class Params {
  private readonly values: Map<string, string>;
  readonly files: UploadedFile[];
  private readonly used = new Set<string>();

  constructor(values: Map<string, string>, files: UploadedFile[] = []) {
    this.values = values;
    this.files = files;
  }

  /** Marks parameters as understood by the endpoint even if this call does not read them. */
  known(...names: string[]): void {
    for (const name of names) this.used.add(name);
  }

  has(name: string): boolean {
    this.used.add(name);
    return this.values.has(name);
  }

  /** The raw string value, or undefined. */
  raw(name: string): string | undefined {
    this.used.add(name);
    return this.values.get(name);
  }

  /** A required string parameter. */
  requiredString(name: string): string {
    const value = this.raw(name);
    if (value === undefined) throw missing(name);
    return value;
  }

  /** A JSON-encoded parameter, decoded; undefined if absent. */
  json(name: string): unknown {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    try {
      return JSON.parse(value) as unknown;
    } catch {
      throw badRequest(`${name} is not valid JSON`);
    }
  }

  bool(name: string, fallback: boolean): boolean {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (value === 'true') return true;
    if (value === 'false') return false;
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      throw badRequest(`${name} is not valid JSON`);
    }
    if (typeof parsed !== 'boolean') throw badRequest(`${name} is not a boolean`);
    return parsed;
  }

  int(name: string): number | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    if (!/^\s*-?\d+\s*$/.test(value)) {
      if (/^\s*-?\d+(?:\.\d+)?(?:e\d+)?\s*$/i.test(value)) throw badRequest(`${name} is not an integer`);
      throw badRequest(`${name} is not valid JSON`);
    }
    return Number(value.trim());
  }

  requiredInt(name: string): number {
    const value = this.int(name);
    if (value === undefined) throw missing(name);
    return value;
  }

  /** A JSON list of integers. */
  intList(name: string): number[] | undefined {
    const value = this.json(name);
    if (value === undefined) return undefined;
    if (!Array.isArray(value)) throw badRequest(`${name} is not a list`);
    for (const [i, v] of value.entries()) {
      if (typeof v !== 'number' || !Number.isInteger(v)) throw badRequest(`${name}[${i}] is not an integer`);
    }
    return value as number[];
  }

  /** Names the endpoint never looked at, for `ignored_parameters_unsupported`. */
  unused(): string[] {
    return [...this.values.keys()].filter((k) => !this.used.has(k) && k !== 'api_key').sort();
  }

  /** All parameters, for the request log; file parts are summarised. */
  snapshot(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [k, v] of this.values) if (k !== 'api_key') out[k] = v;
    for (const f of this.files)
      out[f.field] = { filename: f.filename, size: f.data.length, contentType: f.contentType };
    return out;
  }
}

/** Zulip's error for a missing required parameter. */
export function missing(name: string): ApiError {
  return new ApiError(400, 'REQUEST_VARIABLE_MISSING', `Missing '${name}' argument`, { var_name: name });
}

/** Builds the parameters of a request from its query string and (possibly empty) body. */
export function parseParams(query: URLSearchParams, contentType: string | undefined, body: Buffer): Params {
  const values = new Map<string, string>();
  for (const [k, v] of query) values.set(k, v);
  const bodyValues = new Map<string, string>();
  let files: UploadedFile[] = [];
  const type = (contentType ?? '').toLowerCase();
  if (body.length > 0) {
    if (type.startsWith('multipart/form-data')) {
      const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? '');
      const b = boundary?.[1] ?? boundary?.[2];
      if (!b) throw badRequest('Malformed multipart body');
      const parsed = parseMultipart(body, b);
      for (const [k, v] of parsed.fields) bodyValues.set(k, v);
      files = parsed.files;
    } else if (type === '' || type.startsWith('application/x-www-form-urlencoded')) {
      for (const [k, v] of new URLSearchParams(body.toString('utf8'))) bodyValues.set(k, v);
    }
  }
  // The body wins over the query string, as Django's request.POST does over request.GET.
  for (const [k, v] of bodyValues) values.set(k, v);
  return new Params(values, files);
}

function dispositionParam(header: string, key: string): string | undefined {
  const star = new RegExp(`;\\s*${key}\\*=([^']*)'[^']*'([^;]+)`, 'i').exec(header);
  if (star) {
    try {
      return decodeURIComponent(star[2] as string);
    } catch {
      return star[2];
    }
  }
  const quoted = new RegExp(`;\\s*${key}="((?:[^"\\\\]|\\\\.)*)"`, 'i').exec(header);
  if (quoted) return (quoted[1] as string).replace(/\\(.)/g, '$1');
  const bare = new RegExp(`;\\s*${key}=([^;\\s]+)`, 'i').exec(header);
  return bare?.[1];
}

/** A small RFC 7578 parser: fields as strings, parts with a non-empty filename as files. */
export function parseMultipart(
  body: Buffer,
  boundary: string,
): { fields: [string, string][]; files: UploadedFile[] } {
  const fields: [string, string][] = [];
  const files: UploadedFile[] = [];
  const delimiter = Buffer.from(`--${boundary}`);
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw badRequest('Malformed multipart body');
  while (true) {
    pos += delimiter.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) break;
    if (body[pos] === 0x0d && body[pos + 1] === 0x0a) pos += 2;
    const headerEnd = body.indexOf('\r\n\r\n', pos);
    if (headerEnd < 0) throw badRequest('Malformed multipart body');
    const headers = body.subarray(pos, headerEnd).toString('utf8').split('\r\n');
    const next = body.indexOf(Buffer.from(`\r\n--${boundary}`), headerEnd + 4);
    if (next < 0) throw badRequest('Malformed multipart body');
    const data = body.subarray(headerEnd + 4, next);
    let disposition = '';
    let partType = 'application/octet-stream';
    for (const h of headers) {
      const colon = h.indexOf(':');
      if (colon < 0) continue;
      const name = h.slice(0, colon).trim().toLowerCase();
      const value = h.slice(colon + 1).trim();
      if (name === 'content-disposition') disposition = value;
      else if (name === 'content-type') partType = value;
    }
    const field = dispositionParam(disposition, 'name');
    const filename = dispositionParam(disposition, 'filename');
    if (field !== undefined) {
      if (filename !== undefined && filename !== '') {
        files.push({ field, filename, contentType: partType, data: Buffer.from(data) });
      } else if (filename === undefined) {
        fields.push([field, data.toString('utf8')]);
      }
    }
    pos = next + 2;
  }
  return { fields, files };
}
