// The contract of a stored filters plane, as one suite each implementation runs: the file
// (packages/delivery/test/filters-plane.test.ts) and PostgreSQL (packages/fleet). The rules are
// @zmcp/delivery's: the document always exists after start, a wrong type is invalid (never
// "unrestricted"), a broken or vanished document keeps the last-known-good in force and marks the
// plane stale, tool updates are refused until it is repaired, and the operator's key is the
// operator's. Every wait is on the plane's own events.
import type { FiltersDocument, FiltersEvent, FiltersPlane } from '@zmcp/delivery';
import { afterEach, describe, expect, it } from 'vitest';

/** Where a filters plane keeps its document, and the operator's hands on it. */
export interface FiltersUnderTest {
  /**
   * Opens a plane on the place under test (again, for a second start). Its poll is pushed far
   * out, so a change must arrive through the backend's change events. `quiet`: the plane reloads
   * as late as the backend allows (an operator's edit stays unseen until something reads it).
   */
  open(options?: {
    seed?: FiltersDocument;
    baseline?: readonly string[];
    quiet?: boolean;
  }): Promise<FiltersPlane>;
  /** The operator stores `document` (any JSON value) there, as they would by hand. */
  write(document: unknown): Promise<void>;
  /** The operator removes it. */
  remove(): Promise<void>;
  /** What is stored there now, parsed (`undefined` when nothing is). */
  read(): Promise<unknown>;
  /** What `view().location` names. */
  location: string;
  done(): Promise<void>;
}

/** Resolves with the first event for which `match` is true. */
export function when(plane: FiltersPlane, match: (event: FiltersEvent) => boolean): Promise<FiltersEvent> {
  return new Promise((resolve) => {
    const off = plane.subscribe((event) => {
      if (match(event)) {
        off();
        resolve(event);
      }
    });
  });
}

/** Resolves once the plane has reloaded to `streams`. */
export const reloadedTo = (plane: FiltersPlane, streams: unknown) =>
  when(
    plane,
    (e) =>
      e.kind === 'reloaded' && JSON.stringify(plane.filters.document.streams) === JSON.stringify(streams),
  );

/** Runs the filters plane contract against the place `make` returns (one per test). */
export function describeFiltersPlaneContract(name: string, make: () => Promise<FiltersUnderTest>): void {
  describe(`${name} keeps the filters plane contract`, () => {
    const planes: FiltersPlane[] = [];
    let under: FiltersUnderTest;
    const open = async (options?: Parameters<FiltersUnderTest['open']>[0]) => {
      const plane = await under.open(options);
      planes.push(plane);
      return plane;
    };

    afterEach(async () => {
      await Promise.all(planes.splice(0).map((p) => p.close()));
      await under?.done();
    });

    it('creates the document from the seed on first start, and reads it on the next', async () => {
      under = await make();
      const plane = await open({ seed: { streams: ['general'] }, baseline: ['☣️'] });
      expect(await under.read()).toEqual({ streams: ['general'] });
      expect(plane.view()).toMatchObject({
        filters: { streams: ['general'] },
        stale: false,
        baselineSuppressedReactionEmojis: { count: 1 },
        location: under.location,
      });
      await plane.close();
      // The seed only applies to a missing document; the baseline is never written.
      const again = await open({ seed: { streams: ['other'] } });
      expect(again.filters.document).toEqual({ streams: ['general'] });
      expect(JSON.stringify(await under.read())).not.toContain('☣');
    });

    it('refuses to start on a document with a wrong type or an unknown key, and leaves it as is', async () => {
      under = await make();
      await under.write({ streams: 'a' });
      await expect(open()).rejects.toMatchObject({
        code: 'DELIVERY_FILTERS_INVALID',
        details: { file: under.location, reason: expect.stringContaining('streams') },
      });
      expect(await under.read()).toEqual({ streams: 'a' });
      await under.write({ stream: ['a'] });
      await expect(open()).rejects.toMatchObject({ code: 'DELIVERY_FILTERS_INVALID' });
    });

    it('takes an operator’s change', async () => {
      under = await make();
      const plane = await open();
      const seen = reloadedTo(plane, ['a']);
      await under.write({ streams: ['a'] });
      expect(await seen).toMatchObject({ kind: 'reloaded', source: 'file' });
      expect(plane.stale).toBe(false);
      expect(plane.view().revision).toBeGreaterThan(1);
    });

    it('keeps the last-known-good while the document is removed, and takes the recreated one', async () => {
      under = await make();
      const plane = await open({ seed: { mutedStreams: ['x'] } });
      const stale = when(plane, (e) => e.kind === 'stale');
      await under.remove();
      expect(await stale).toMatchObject({ kind: 'stale', reason: expect.stringContaining('missing') });
      expect(plane.filters.document).toEqual({ mutedStreams: ['x'] });
      await expect(plane.update({ mutedStreams: [] })).rejects.toMatchObject({
        code: 'DELIVERY_FILTERS_STALE',
        details: { file: under.location },
      });
      expect(await under.read()).toBeUndefined();
      const back = reloadedTo(plane, ['d']);
      await under.write({ streams: ['d'] });
      await back;
      expect(plane.view().stale).toBe(false);
    });

    it('an invalid document while running marks the plane stale and refuses updates until repaired', async () => {
      under = await make();
      const plane = await open({ seed: { streams: ['a'] } });
      const stale = when(plane, (e) => e.kind === 'stale');
      await under.write({ streams: 7 });
      expect(await stale).toMatchObject({ reason: expect.stringContaining('streams') });
      expect(plane.filters.document).toEqual({ streams: ['a'] });
      expect(plane.filters.allowsStream({ streamId: 1, name: 'a' })).toBe(true);
      expect(plane.filters.allowsStream({ streamId: 2, name: 'b' })).toBe(false);
      expect(plane.view()).toMatchObject({ stale: true, staleReason: expect.stringContaining('streams') });
      await expect(plane.update({ streams: ['b'] })).rejects.toMatchObject({
        code: 'DELIVERY_FILTERS_STALE',
      });
      expect(await under.read()).toEqual({ streams: 7 });
      const repaired = reloadedTo(plane, ['e']);
      await under.write({ streams: ['e'] });
      await repaired;
      await expect(plane.update({ streams: ['f'] })).resolves.toMatchObject({
        stale: false,
        filters: { streams: ['f'] },
      });
      expect(await under.read()).toEqual({ streams: ['f'] });
    });

    it('updates keep the operator-owned key, report it only as count and digest, and refuse to write it', async () => {
      under = await make();
      await under.write({ suppressedReactionEmojis: ['biohazard', 'skull'] });
      const plane = await open();
      const events: FiltersEvent[] = [];
      plane.subscribe((e) => events.push(e));
      const view = await plane.update({ mutedStreams: ['random'] });
      expect(events).toContainEqual(expect.objectContaining({ kind: 'reloaded', source: 'update' }));
      expect(view.filters).toEqual({ mutedStreams: ['random'] });
      expect(view.location).toBe(under.location);
      expect(JSON.stringify(view)).not.toContain('biohazard');
      expect(view.suppressedReactionEmojis).toMatchObject({
        count: 2,
        digest: expect.stringMatching(/^[0-9a-f]{16}$/),
      });
      expect(await under.read()).toEqual({
        suppressedReactionEmojis: ['biohazard', 'skull'],
        mutedStreams: ['random'],
      });
      await expect(plane.update({ suppressedReactionEmojis: [] } as never)).rejects.toMatchObject({
        code: 'DELIVERY_FILTERS_OPERATOR_ONLY',
      });
      await expect(plane.update({ streams: 'all' } as never)).rejects.toMatchObject({
        code: 'DELIVERY_FILTERS_INVALID',
      });
      expect(await under.read()).toEqual({
        suppressedReactionEmojis: ['biohazard', 'skull'],
        mutedStreams: ['random'],
      });
    });

    it('an update re-reads the document first, so an operator’s edit not yet reloaded survives it', async () => {
      under = await make();
      const plane = await open({ quiet: true });
      await under.write({ streams: ['operator'] });
      await plane.update({ mutedStreams: ['m'] });
      expect(await under.read()).toEqual({ streams: ['operator'], mutedStreams: ['m'] });
      expect(plane.filters.document).toEqual({ streams: ['operator'], mutedStreams: ['m'] });
    });

    it('a closed plane refuses updates', async () => {
      under = await make();
      const plane = await open();
      await plane.close();
      await expect(plane.update({ streams: [] })).rejects.toMatchObject({ code: 'DELIVERY_NOT_RUNNING' });
    });
  });
}
