import type { RegisteredProcess, StateBackend } from '@zmcp/fleet';
import { Gauge } from 'prom-client';
import type { OperatorConsole } from './console.js';
import { ownerLabel } from './queue-owner.js';

/** What {@link watchFleet} gives: this process's registration, a refresh, and the end. */
export interface FleetWatch {
  /** This process in the fleet's registry (its counted leases); `undefined` on files. */
  readonly process: RegisteredProcess | undefined;
  /** Reads the fleet now (the watch reads it every `intervalMs` by itself) into the console. */
  refresh(): Promise<void>;
  /** Stops the watch and removes this process from the registry. Safe to call twice. */
  close(): Promise<void>;
}

/** Options of {@link watchFleet}. */
export interface WatchFleetOptions {
  /** The state backend the process runs on (`runtime.backend`). */
  backend: Pick<StateBackend, 'processes' | 'events'>;
  /** The bin, as the registry and the page name it. */
  bin: string;
  /** The bots whose event queue owners are shown: their state account and a name (the bot's email). */
  queues: readonly { account: string; bot: string }[];
  /** How often the fleet is read besides each request of the page. Default 2000 ms. */
  intervalMs?: number | undefined;
}

/**
 * With `ZULIP_STATE_URL`: registers this process in the fleet's registry (a heartbeat row) and
 * shows the fleet on the console, read afresh for every page and metrics request (and every
 * `intervalMs`): the process panel lists every process
 * (bin, pid, host, start, last seen; a silent one as gone) and the owner of each bot's event
 * queue, and the metrics `zmcp_fleet_processes{state}` and `zmcp_fleet_queue_owned{owner}` say the
 * same. Only process facts are shown: never a token, key or person. On files it does nothing (the
 * page says the process runs alone).
 *
 * @throws DeliveryError `DELIVERY_IO_FAILED` when the process cannot be registered.
 */
export async function watchFleet(console: OperatorConsole, options: WatchFleetOptions): Promise<FleetWatch> {
  const registry = options.backend.processes;
  if (registry === undefined) {
    return { process: undefined, refresh: async () => undefined, close: async () => undefined };
  }
  const self = await registry.register({ bin: options.bin });
  const processes = new Gauge({
    name: 'zmcp_fleet_processes',
    help: 'Processes of the fleet (sharing ZULIP_STATE_URL), running or gone (silent for three heartbeats).',
    labelNames: ['state'],
    registers: [console.metrics],
  });
  const owned = new Gauge({
    name: 'zmcp_fleet_queue_owned',
    help: 'Whether a process of the fleet owns a bot’s Zulip event queue (1), by owner and queue bot.',
    labelNames: ['queue_bot', 'owner'],
    registers: [console.metrics],
  });
  const events = options.backend.events;
  const refresh = async (): Promise<void> => {
    try {
      const listed = await registry.list();
      const queueOwners = await Promise.all(
        options.queues.map(async (q) => ({
          bot: q.bot,
          owner: events === undefined ? 'this process' : ownerLabel(await events.owner(q.account)),
        })),
      );
      console.fleet = {
        processes: listed.map((p) => ({ ...p, self: p.id === self.id })),
        queueOwners,
      };
      processes.reset();
      processes.set({ state: 'running' }, listed.filter((p) => !p.gone).length);
      processes.set({ state: 'gone' }, listed.filter((p) => p.gone).length);
      owned.reset();
      for (const q of queueOwners) {
        owned.set(
          { queue_bot: q.bot, owner: q.owner.startsWith('nobody') ? 'nobody' : q.owner },
          q.owner.startsWith('nobody') ? 0 : 1,
        );
      }
    } catch {
      // The database does not answer: the page keeps the last view it had.
    }
  };
  await refresh();
  // Read afresh for each page and metrics request (an operator sees the fleet as it is now), and
  // every `intervalMs` for a page opened long ago.
  const removeRefresher = console.addRefresher(refresh);
  const timer = setInterval(() => void refresh(), options.intervalMs ?? 2_000);
  timer.unref();
  let closed: Promise<void> | undefined;
  return {
    process: self,
    refresh,
    close() {
      closed ??= (async () => {
        clearInterval(timer);
        removeRefresher();
        await self.close();
      })();
      return closed;
    },
  };
}
