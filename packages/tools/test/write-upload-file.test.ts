import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadFileTool } from '../src/write/upload-file.js';
import { type Harness, startHarness } from './harness.js';
import { callWith, expectFail, expectOk } from './write-fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ uploadRoot: true });
});
afterAll(async () => {
  await h.close();
});

describe('upload_file', () => {
  it('uploads inline data and returns the path, URL and Markdown link', async () => {
    const { text, structured } = expectOk(
      h,
      'upload_file',
      await h.call('upload_file', {
        attachment: { data: Buffer.from('\x89PNG fake', 'latin1').toString('base64'), name: 'chart.png' },
      }),
    );
    const path = structured.path as string;
    expect(path).toMatch(/^\/user_uploads\/.+\/chart\.png$/);
    expect(structured).toEqual({
      path,
      url: `${h.sim.url}${path}`,
      content_type: 'image/png',
      size: 9,
    });
    const stored = h.sim.realm.uploads().find((u) => u.url === path);
    expect(stored?.ownerId).toBe(h.realm.bot.userId);
    expect(Buffer.from(stored?.bytes ?? []).toString('latin1')).toBe('\x89PNG fake');
    expect(text).toContain(`Markdown link: [chart.png](${path})`);
  });

  it('uploads a file from an upload root; the link works in an edit', async () => {
    await writeFile(join(h.uploadDir as string, 'notes.md'), '# notes\n');
    const { structured } = expectOk(
      h,
      'upload_file',
      await h.call('upload_file', { attachment: { file: 'work/notes.md' } }),
    );
    expect(structured.path).toMatch(/\/notes\.md$/);
    const sent = expectOk(
      h,
      'send_message',
      await h.call('send_message', { stream: 'general', topic: 'notes', content: 'draft' }),
    );
    expectOk(
      h,
      'edit_message',
      await h.call('edit_message', {
        message_id: sent.structured.message_id,
        content: `final: ${structured.markdown as string}`,
      }),
    );
    expect(h.sim.realm.message(sent.structured.message_id as number)?.content).toBe(
      `final: ${structured.markdown as string}`,
    );
  });

  it('refuses escapes, bad base64 and bad input, uploading nothing', async () => {
    const before = h.sim.realm.uploads().length;
    const escaped = expectFail(
      await h.call('upload_file', { attachment: { file: 'work/../../etc/passwd' } }),
      'UPLOAD_PATH_ESCAPE',
    );
    expect(escaped.text).toContain('upload roots: work');
    expectFail(await h.call('upload_file', { attachment: { file: '/etc/passwd' } }), 'UPLOAD_ABSOLUTE_PATH');
    expectFail(
      await h.call('upload_file', { attachment: { data: '@@@', name: 'x.bin' } }),
      'UPLOAD_BAD_BASE64',
    );
    expectFail(await h.call('upload_file', { attachment: { data: 'AAAA' } }), 'TOOLS_INVALID_INPUT');
    expectFail(await h.call('upload_file', {}), 'TOOLS_INVALID_INPUT');
    expect(h.sim.realm.uploads().length).toBe(before);
  });

  it('refuses a file over the per-file cap with the cap in the hint', async () => {
    const small = { ...h.services, maxFileBytes: 4 };
    const res = expectFail(
      await callWith(uploadFileTool, small, {
        attachment: { data: Buffer.from('12345').toString('base64'), name: 'a.txt' },
      }),
      'UPLOAD_TOO_LARGE',
    );
    expect(res.text).toContain('4 bytes');
  });
});

describe('upload_file without upload roots', () => {
  let bare: Harness;
  beforeAll(async () => {
    bare = await startHarness();
  });
  afterAll(async () => {
    await bare.close();
  });

  it('refuses local files and points at inline data', async () => {
    const res = expectFail(
      await bare.call('upload_file', { attachment: { file: 'work/x.txt' } }),
      'UPLOAD_NO_ROOTS',
    );
    expect(res.text).toContain('inline');
    expect(bare.sim.realm.uploads()).toHaveLength(0);
  });
});
