import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { type Browser, chromium, type Page } from 'playwright-core';

// Helpers of the status-page tests: a Prometheus text-format parser, and Debian's chromium driven
// by playwright-core (scripts/system-deps.sh installs it).

/** One metric family as a Prometheus text-format parser reads it. */
export interface MetricFamily {
  name: string;
  type: string;
  samples: { labels: Record<string, string>; value: number; count?: number }[];
}

/**
 * Parses `/metrics` with a Prometheus text-format parser (it throws on malformed input). Its
 * histograms keep their buckets only, not the labelled `_count` and `_sum` lines.
 */
export function parseMetrics(text: string): Map<string, MetricFamily> {
  const out = new Map<string, MetricFamily>();
  for (const family of parsePrometheusTextFormat(text)) {
    out.set(family.name, {
      name: family.name,
      type: family.type,
      samples: family.metrics.map((m) => ({
        labels: m.labels ?? {},
        value: Number(m.value ?? m.sum ?? Number.NaN),
        ...(m.count === undefined ? {} : { count: Number(m.count) }),
      })),
    });
  }
  return out;
}

/** Where tests keep their artifacts (screenshots): gitignored. */
export const ARTIFACT_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '.artifacts');

/** Writes a screenshot of the page under {@link ARTIFACT_DIR}; returns its path. */
export async function keepScreenshot(page: Page, name: string): Promise<string> {
  await mkdir(ARTIFACT_DIR, { recursive: true });
  const path = join(ARTIFACT_DIR, name);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Debian's chromium, or the one ZMCP_CHROMIUM names. */
export function chromiumPath(): string {
  const candidates = [process.env.ZMCP_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  const found = candidates.find((p): p is string => p !== undefined && p !== '' && existsSync(p));
  if (found === undefined) {
    throw new Error(
      'chromium is not installed: run scripts/system-deps.sh as root (apt-get install chromium)',
    );
  }
  return found;
}

/** Launches headless chromium; one per test file. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

/** A page that records every console error and page error (an uncaught exception, a CSP violation). */
export async function watchedPage(browser: Browser): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  const errors: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  page.on('pageerror', (err) => errors.push(String(err)));
  page.on('dialog', (dialog) => {
    errors.push(`dialog opened: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return { page, errors };
}

/** The rows of a panel's table, as the text of their cells. */
export function panelRows(page: Page, panel: string): Promise<string[][]> {
  return page.$$eval(`#${panel} tbody tr`, (trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
  );
}

interface DomLike {
  querySelectorAll(selector: string): ArrayLike<{
    textContent: string | null;
    querySelector(s: string): { textContent: string | null } | null;
  }>;
}

/**
 * Waits until a panel's table has a row whose first cell is `first` and whose text holds `text`:
 * the page refreshes itself, so this is how a test sees it follow the process.
 */
export async function waitForRow(page: Page, panel: string, first: string, text: string): Promise<void> {
  await page.waitForFunction(
    ([panel, first, text]) => {
      const doc = (globalThis as unknown as { document: DomLike }).document;
      return Array.from(doc.querySelectorAll(`#${panel} tbody tr`)).some(
        (tr) => tr.querySelector('td')?.textContent === first && (tr.textContent ?? '').includes(text),
      );
    },
    [panel, first, text] as const,
    { timeout: 15_000 },
  );
}
