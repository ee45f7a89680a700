import type { CallOptions } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool, type ToolDefinition, type Toolset } from '../tool.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  itemNotes,
  limitSchema,
  nextCursor,
  OFFSET_PAGE_FIELDS,
  offsetFrom,
  pageItems,
  queryOf,
  READ_ANNOTATIONS,
  rangeOf,
  readCursor,
} from './shared.js';

/** The input fields every offset-paged list adds to its query. */
function pageInput(max: number, fallback: number) {
  return { limit: limitSchema(max, fallback), cursor: CursorSchema };
}

type PageInput = ReturnType<typeof pageInput>;
type ListInput<Q extends z.ZodRawShape> = z.ZodObject<Q & PageInput>;
type ListOutput<X extends z.ZodRawShape> = z.ZodObject<
  X & { total: z.ZodNumber } & typeof OFFSET_PAGE_FIELDS
>;

/** What a list step found: every item in order, and whatever else its summary and fields need. */
export interface Listing {
  items: readonly unknown[];
}

type ItemOf<L extends Listing> = L['items'][number];

/**
 * A read-only list with offset cursors: its query fields, how to list and render the items, and
 * its summary and typed fields. {@link defineListTool} adds the paging: `limit` and `cursor`, the
 * cursor check, the page budget, the continuation sentence and `total`/`offset`/`truncated`/
 * `next_cursor`.
 */
export interface ListToolSpec<Q extends z.ZodRawShape, X extends z.ZodRawShape, L extends Listing> {
  name: string;
  title: string;
  description: string;
  toolset: Toolset;
  /** The query fields; `limit` and `cursor` are added. */
  query: Q;
  limit: { max: number; fallback: number };
  /** The typed fields beside `total`, `offset`, `truncated` and `next_cursor`. */
  output: X;
  /** What "More … remain" names: `users`, `topics`. */
  noun: string;
  list(services: ToolServices, input: z.infer<ListInput<Q>>, call: CallOptions): Promise<L>;
  /** One model-visible line per item; names in it are escaped or quoted. */
  line(item: ItemOf<L>): string;
  /** The summary sentence before the lines; `range` reads `showing 1–50 of 120`. */
  summary(listing: L, range: string, input: z.infer<ListInput<Q>>): string;
  /** The typed fields of the page, given the items shown. */
  data(listing: L, shown: readonly ItemOf<L>[]): z.infer<z.ZodObject<X>>;
}

/** A list tool from its spec: see {@link ListToolSpec}. */
export function defineListTool<Q extends z.ZodRawShape, X extends z.ZodRawShape, L extends Listing>(
  spec: ListToolSpec<Q, X, L>,
): ToolDefinition<ListInput<Q>, ListOutput<X>, ToolServices> {
  const inputSchema = z.object({ ...spec.query, ...pageInput(spec.limit.max, spec.limit.fallback) });
  const outputSchema = z.object({ ...spec.output, total: z.number().int(), ...OFFSET_PAGE_FIELDS });
  return defineTool({
    name: spec.name,
    title: spec.title,
    description: spec.description,
    inputSchema: inputSchema as ListInput<Q>,
    outputSchema: outputSchema as ListOutput<X>,
    annotations: READ_ANNOTATIONS,
    write: false,
    toolset: spec.toolset,
    async handler(services: ToolServices, input, context) {
      checkDeadline(context);
      const paging = input as { cursor?: string; limit: number };
      const query = queryOf(paging);
      const offset = offsetFrom(readCursor(spec.name, query, paging.cursor, ['offset']));
      const listing = await spec.list(services, input, callOptions(context));
      const page = pageItems(services, listing.items, offset, paging.limit, (item) => spec.line(item));
      const cursor = nextCursor(
        spec.name,
        query,
        page.nextOffset === undefined ? undefined : { kind: 'offset', offset: page.nextOffset },
      );
      const range = rangeOf(offset, page.items.length, listing.items.length);
      const summary = spec.summary(listing, range, input) + itemNotes(page, cursor, spec.noun);
      const data = {
        ...spec.data(listing, page.items),
        total: listing.items.length,
        offset,
        truncated: page.truncated,
        next_cursor: cursor,
      };
      return {
        text: page.items.length === 0 ? summary : `${summary}\n${page.text}`,
        data: data as z.infer<ListOutput<X>>,
      };
    },
  });
}
