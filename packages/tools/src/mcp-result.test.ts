import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolHost } from './host.js';
import { toMcpResult } from './mcp-result.js';
import { bindTool, defineTool, type ToolImage } from './tool.js';

// Outcomes come from a real host, so the rendering is checked against what hosts are handed.

const pixel: ToolImage = { data: 'iVBORw0KGgo=', mimeType: 'image/png' };

const picture = defineTool({
  name: 'picture',
  title: 'Picture',
  description: 'Shows a picture when asked, and fails when told to.',
  inputSchema: z.object({ fail: z.boolean().describe('Fail instead') }),
  outputSchema: z.object({ shown: z.number().int() }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  toolset: 'read',
  write: false,
  async handler(_services: null, input) {
    if (input.fail)
      return { isError: true, text: 'No picture today. Try tomorrow.', code: 'TEST_NO_PICTURE' };
    return { text: 'one picture', data: { shown: 1 }, images: [pixel] };
  },
});

const host = new ToolHost([bindTool(picture, null)], { deadlineMs: 5000 });

describe('toMcpResult', () => {
  it('renders a success as its text, then its images, with the same text leading structuredContent', async () => {
    const result = toMcpResult(await host.call('picture', { fail: false }));
    expect(result).toEqual({
      content: [
        { type: 'text', text: 'one picture' },
        { type: 'image', data: pixel.data, mimeType: 'image/png' },
      ],
      structuredContent: { text: 'one picture', shown: 1 },
    });
    expect(result.isError).toBeUndefined();
    expect(result._meta).toBeUndefined();
  });

  it('renders a failure as its text with isError and the stable code in _meta, and nothing structured', async () => {
    const result = toMcpResult(await host.call('picture', { fail: true }));
    expect(result).toEqual({
      content: [{ type: 'text', text: 'No picture today. Try tomorrow.' }],
      isError: true,
      _meta: { 'zmcp/error': { code: 'TEST_NO_PICTURE' } },
    });
    expect('structuredContent' in result).toBe(false);
  });

  it('renders an invalid call the host refused with its TOOLS_ code', async () => {
    const result = toMcpResult(await host.call('picture', { fail: 'yes' }));
    expect(result.isError).toBe(true);
    expect(result._meta?.['zmcp/error'].code).toBe('TOOLS_INVALID_INPUT');
    expect(result.content).toHaveLength(1);
    expect(result.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('fail') });
  });
});
