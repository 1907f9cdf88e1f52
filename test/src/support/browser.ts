// A real headless Chromium (the OS package, installed on first use by the kit) driven by
// playwright-core, and helpers to see what a page fetched and how it looked; for the dashboard
// browser tests.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { chromium, type Browser, type Page, type Response } from 'playwright-core';

import { ensureChromium } from '@mirrorhub/infra/components/index';

export interface LaunchedBrowser {
  browser: Browser;
  /** A page in its own fresh context (no cookies or storage shared with other pages). */
  newPage(): Promise<Page>;
  /** Closes every page and the browser. Idempotent. */
  close(): Promise<void>;
}

/** Launches headless Chromium (`ensureChromium()`: `$MIRRORHUB_CHROMIUM`, or the OS package). */
export async function launchBrowser(): Promise<LaunchedBrowser> {
  const browser = await chromium.launch({
    executablePath: await ensureChromium(),
    headless: true,
    // Containers: no user namespaces for the sandbox, and a small /dev/shm.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  let closed: Promise<void> | undefined;
  return {
    browser,
    newPage: () => browser.newPage(),
    close: () => {
      closed ??= browser.close().catch(() => undefined);
      return closed;
    },
  };
}

export interface RecordedResponse {
  url: string;
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The body as UTF-8 text; '' when the browser has none (redirects) or it could not be read. */
  body: string;
  /** Why the body could not be read, when it could not. */
  bodyError?: string;
}

export interface ResponseRecorder {
  /** Every finished response so far, in the order their bodies were read. */
  responses: RecordedResponse[];
  /** Waits until the bodies of the responses seen so far are read (call it before scanning). */
  settled(): Promise<void>;
  /** Stops recording (responses already seen are still read). */
  stop(): void;
}

function isEventStream(response: Response, headers: Record<string, string>): boolean {
  return (
    response.request().resourceType() === 'eventsource' ||
    /^\s*text\/event-stream\b/i.test(headers['content-type'] ?? '')
  );
}

async function readBody(response: Response, timeoutMs: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no end of body after ${timeoutMs}ms`)), timeoutMs);
  });
  try {
    return (await Promise.race([response.body(), timeout])).toString('utf8');
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Records every response of `page` with its headers and body, except event streams
 * (`text/event-stream`, whose body never ends). Bodies are read in the background: await
 * `settled()` before scanning `responses`.
 */
export function recordResponses(
  page: Page,
  opts: { bodyTimeoutMs?: number } = {},
): ResponseRecorder {
  const responses: RecordedResponse[] = [];
  const pending = new Set<Promise<void>>();
  const bodyTimeoutMs = opts.bodyTimeoutMs ?? 15_000;

  const onResponse = (response: Response): void => {
    const task = (async () => {
      const headers = await response.allHeaders().catch(() => response.headers());
      if (isEventStream(response, headers)) return;
      const entry: RecordedResponse = {
        url: response.url(),
        status: response.status(),
        headers,
        body: '',
      };
      const redirect = response.status() >= 300 && response.status() < 400;
      try {
        entry.body = await readBody(response, bodyTimeoutMs);
      } catch (err) {
        // Redirects have no body for the browser; a closed page or a reset connection none either.
        if (!redirect) entry.bodyError = err instanceof Error ? err.message : String(err);
      }
      responses.push(entry);
    })().catch(() => undefined);
    pending.add(task);
    void task.finally(() => pending.delete(task));
  };
  page.on('response', onResponse);

  return {
    responses,
    settled: async () => {
      while (pending.size > 0) await Promise.all([...pending]);
    },
    stop: () => {
      page.off('response', onResponse);
    },
  };
}

/** Writes a PNG of the whole page to `file` (its folder is created); returns `file`. */
export async function screenshot(page: Page, file: string): Promise<string> {
  await fs.mkdir(path.dirname(path.resolve(file)), { recursive: true });
  await page.screenshot({ path: file, fullPage: true, type: 'png' });
  return file;
}
