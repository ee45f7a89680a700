import type { SimFaultHandle, SimFaultRule, SimFaults } from './types.js';

interface Installed {
  rule: SimFaultRule;
  hits: number;
  remaining: number;
}

/** What the matching fault rules ask of one request. */
export interface FaultPlan {
  latencyMs: number;
  status?: number;
  retryAfter?: number;
  dropConnection: boolean;
  truncateBody: boolean;
}

/** The installed fault rules; every matching rule applies, in installation order. */
export class FaultSet implements SimFaults {
  private rules: Installed[] = [];

  add(rule: SimFaultRule): SimFaultHandle {
    const installed: Installed = {
      rule: { ...rule },
      hits: 0,
      remaining: rule.times ?? Number.POSITIVE_INFINITY,
    };
    this.rules.push(installed);
    return {
      remove: () => {
        this.rules = this.rules.filter((r) => r !== installed);
      },
      get hits() {
        return installed.hits;
      },
    };
  }

  clear(): void {
    this.rules = [];
  }

  /** Consumes the rules matching a request and merges what they ask. */
  plan(method: string, path: string): FaultPlan | undefined {
    if (this.rules.length === 0) return undefined;
    const apiPath = path.startsWith('/api/v1/') ? path.slice('/api/v1'.length) : path;
    let plan: FaultPlan | undefined;
    for (const r of this.rules) {
      if (r.remaining <= 0) continue;
      const { rule } = r;
      if (rule.method && rule.method.toUpperCase() !== method) continue;
      if (rule.path !== undefined) {
        const hit =
          typeof rule.path === 'string' ? rule.path === path || rule.path === apiPath : rule.path.test(path);
        if (!hit) continue;
      }
      r.hits++;
      r.remaining--;
      plan ??= { latencyMs: 0, dropConnection: false, truncateBody: false };
      plan.latencyMs += rule.latencyMs ?? 0;
      if (rule.status !== undefined && plan.status === undefined) {
        plan.status = rule.status;
        if (rule.retryAfter !== undefined) plan.retryAfter = rule.retryAfter;
      }
      plan.dropConnection ||= rule.dropConnection ?? false;
      plan.truncateBody ||= rule.truncateBody ?? false;
    }
    this.rules = this.rules.filter((r) => r.remaining > 0);
    return plan;
  }
}
