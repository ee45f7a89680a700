import { describe, expect, it } from 'vitest';
import {
  advertisedPaths,
  CapabilityGrant,
  changedDomains,
  closeTags,
  composeManifest,
  deriveFeatureSets,
  manifestRevision,
  parsePolicyUpdate,
  patternMatches,
  presentManifest,
} from '../src/index.js';

describe('capability grants (§5.4)', () => {
  it('matches `*` against exactly one segment, with equal segment counts', () => {
    expect(patternMatches('channels.*', 'channels.publish')).toBe(true);
    expect(patternMatches('channels.*', 'channels.publish.anything')).toBe(false);
    expect(patternMatches('contextHooks.*', 'contextHooks.beforeInference.inject.system')).toBe(false);
    expect(
      patternMatches('contextHooks.beforeInference.inject.*', 'contextHooks.beforeInference.inject.system'),
    ).toBe(true);
    expect(patternMatches('*', 'tools')).toBe(true);
    expect(patternMatches('*', 'channels.publish')).toBe(false);
  });

  it('does not let a bare parent grant its leaves', () => {
    const grant = CapabilityGrant.of(['channels']);
    expect(grant.has('channels')).toBe(true);
    expect(grant.has('channels.publish')).toBe(false);
  });

  it('denies everything absent, and the empty grant denies all', () => {
    expect(CapabilityGrant.of(['tools']).has('pushEvents')).toBe(false);
    expect(CapabilityGrant.empty().has('tools')).toBe(false);
  });

  it('walks an advertisement recursively, expanding `true` to the leaves beneath it', () => {
    const paths = advertisedPaths({
      version: '0.5',
      pushEvents: true,
      contextHooks: { beforeInference: { inject: { beforeUser: true } } },
      inferenceRequest: true,
      channels: { register: true, streaming: false },
      vendor: { deep: { knob: true } },
      featureSets: { x: { uses: ['tools'] } },
    });
    expect([...paths].sort()).toEqual([
      'channels.register',
      'contextHooks.beforeInference.inject.beforeUser',
      'inferenceRequest',
      'inferenceRequest.streaming',
      'pushEvents',
      'vendor.deep.knob',
    ]);
    expect([...advertisedPaths({ channels: true })]).toHaveLength(7);
  });
});

describe('policy params (§5.3)', () => {
  it('reads the four fields', () => {
    expect(parsePolicyUpdate({ effectiveCapabilities: ['tools'], enabled: ['a.b'], disabled: [] })).toEqual({
      effectiveCapabilities: ['tools'],
      enabled: ['a.b'],
      disabled: [],
    });
    expect(parsePolicyUpdate(undefined)).toEqual({});
  });

  it('rejects a path in both lists, wrong types and bad paths as malformed', () => {
    expect(() =>
      parsePolicyUpdate({ effectiveCapabilities: ['tools'], deniedCapabilities: ['tools'] }),
    ).toThrow(/both/);
    expect(() => parsePolicyUpdate({ effectiveCapabilities: 'tools' })).toThrow(/effectiveCapabilities/);
    expect(() => parsePolicyUpdate({ effectiveCapabilities: ['channels..publish'] })).toThrow(
      /capability path/,
    );
    expect(() => parsePolicyUpdate([1])).toThrow(/object/);
  });
});

describe('feature-set derivation (§6.4)', () => {
  const declarations = {
    'memory.retrieval': { uses: ['contextHooks.beforeInference.observe'] },
    'memory.proactive': { uses: ['pushEvents'] },
    broken: { uses: ['pushEvents', 'nonsense'] },
    empty: { uses: [] },
  };

  it('fails closed on invalid uses and on a missing capability', () => {
    const statuses = deriveFeatureSets(declarations, CapabilityGrant.of(['pushEvents']), { disabled: [] });
    expect(statuses).toEqual([
      {
        name: 'memory.retrieval',
        enabled: false,
        reason: 'capability_denied',
        missingCapabilities: ['contextHooks.beforeInference.observe'],
      },
      { name: 'memory.proactive', enabled: true, missingCapabilities: [] },
      { name: 'broken', enabled: false, reason: 'invalid_uses', missingCapabilities: [] },
      { name: 'empty', enabled: false, reason: 'invalid_uses', missingCapabilities: [] },
    ]);
  });

  it('treats `enabled` as an allowlist that never widens, and `disabled` as subtracting', () => {
    const grant = CapabilityGrant.of(['pushEvents']);
    const narrowed = deriveFeatureSets(declarations, grant, { enabled: ['memory.retrieval'], disabled: [] });
    expect(narrowed.find((s) => s.name === 'memory.proactive')?.reason).toBe('not_selected');
    expect(narrowed.find((s) => s.name === 'memory.retrieval')?.enabled).toBe(false);
    const wild = deriveFeatureSets(declarations, grant, { enabled: ['memory.*'], disabled: [] });
    expect(wild.find((s) => s.name === 'memory.proactive')?.enabled).toBe(true);
    const off = deriveFeatureSets(declarations, grant, { disabled: ['memory.*'] });
    expect(off.find((s) => s.name === 'memory.proactive')?.reason).toBe('disabled');
  });
});

describe('tags (§16)', () => {
  it('emits the umbrellas and drops ambient once addressed', () => {
    expect(closeTags(['chat:dm', 'chat:ambient', 'chat:dm'])).toEqual([
      'chat:dm',
      'chat:addressed',
      'chat:private',
    ]);
    expect(closeTags(['chat:mention', 'zulip:stream'])).toEqual([
      'chat:mention',
      'chat:addressed',
      'zulip:stream',
    ]);
    expect(closeTags(['chat:ambient', 'urgency:level=high'])).toEqual(['chat:ambient', 'urgency:level=high']);
  });

  it('closes a long list the same way, each tag once, in first-seen order', () => {
    const many = Array.from({ length: 40 }, (_, i) => `topic:t${i % 30}`);
    const closed = closeTags(['chat:ambient', ...many, 'chat:reply', 'topic:t3', 'chat:dm']);
    expect(closed).toEqual([
      ...Array.from({ length: 30 }, (_, i) => `topic:t${i}`),
      'chat:reply',
      'chat:addressed',
      'chat:dm',
      'chat:private',
    ]);
  });

  it('refuses un-namespaced tags', () => {
    expect(() => closeTags(['mention'])).toThrow(/namespace:value/);
    expect(() => closeTags(['chat: mention'])).toThrow(/namespace:value/);
  });
});

describe('manifest (§17)', () => {
  const definition = {
    capabilities: { pushEvents: true, channels: { register: true, incoming: true } },
    featureSets: {
      'demo.messaging': { description: 'Demo', uses: ['pushEvents', 'channels.incoming', 'tools'] },
    },
  };

  it('composes, and refuses feature sets that use what is not advertised', () => {
    const manifest = composeManifest(definition, true);
    expect(manifest.version).toBe('0.5');
    expect(() => composeManifest(definition, false)).toThrow(/does not advertise/);
    expect(() =>
      composeManifest(
        { capabilities: {}, featureSets: { 'a/b': { description: 'x', uses: ['tools'] } } },
        true,
      ),
    ).toThrow(/identifier/);
  });

  it('presents either form, each with its own digest', () => {
    const manifest = composeManifest(definition, true);
    const object = presentManifest(manifest, 'object');
    const array = presentManifest(manifest, 'array');
    expect(object.revision).toBe(manifestRevision(manifest));
    expect(array.featureSets).toEqual([
      { name: 'demo.messaging', ...definition.featureSets['demo.messaging'] },
    ]);
    expect(array.revision).toBe(manifestRevision(array));
    expect(array.revision).not.toBe(object.revision);
  });

  it('derives changed domains, with absent and empty distinct', () => {
    expect(changedDomains({ version: '0.5' }, { version: '0.5', featureSets: {} })).toEqual([
      'featureSets',
      'tagOntology',
    ]);
    expect(
      changedDomains({ version: '0.5', pushEvents: true }, { version: '0.5', pushEvents: false }),
    ).toEqual(['capabilities']);
    const before = { version: '0.5', featureSets: { a: { description: 'x', uses: ['tools'] } } };
    const after = {
      version: '0.5',
      featureSets: { a: { description: 'x', uses: ['tools'], tagOntology: { coreTags: ['chat:dm'] } } },
    };
    expect(changedDomains(before, after)).toEqual(['tagOntology']);
    expect(changedDomains(before, before)).toEqual([]);
  });
});
