// The browser kit itself: a real headless Chromium (installed on first use) opens a page from a
// loopback server, runs its script, and the helpers see its fetch and its pixels.
import * as fs from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  launchBrowser,
  recordResponses,
  screenshot,
  type LaunchedBrowser,
} from './support/browser.js';

const PAGE = `<!doctype html>
<html><head><title>kit</title><script src="/app.js" defer></script></head>
<body><h1>browser kit</h1><p id="out">loading</p><p id="events"></p></body></html>`;
// An event stream that stays open, as the dashboard's live updates will: never recorded.
const SCRIPT = `new EventSource('/events').onmessage = (e) => {
  document.getElementById('events').textContent = 'event: ' + e.data;
};
fetch('/data').then((r) => r.json()).then((d) => {
  document.getElementById('out').textContent = 'data: ' + d.message;
});`;
const DATA = JSON.stringify({ message: 'hello from the server' });

describe('browser kit', () => {
  let server: Server | undefined;
  let baseUrl = '';
  let kit: LaunchedBrowser | undefined;
  let dir = '';

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-browser-kit-'));
    server = createServer((req, res) => {
      const send = (type: string, body: string) =>
        res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
      if (req.url === '/') send('text/html; charset=utf-8', PAGE);
      else if (req.url === '/app.js') send('text/javascript', SCRIPT);
      else if (req.url === '/data') send('application/json', DATA);
      else if (req.url === '/events')
        res.writeHead(200, { 'content-type': 'text/event-stream' }).write('data: tick\n\n');
      else res.writeHead(404).end();
    });
    const listening = server;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    kit = await launchBrowser();
  });

  afterAll(async () => {
    await kit?.close();
    const open = server;
    open?.closeAllConnections(); // the event stream never ends by itself
    if (open) await new Promise<void>((resolve) => open.close(() => resolve()));
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('runs a page script, records its fetch with the body but not its event stream, and takes a PNG screenshot', async () => {
    const page = await kit!.newPage();
    const recorder = recordResponses(page);
    await page.goto(baseUrl);
    await page.getByText('data: hello from the server').waitFor({ timeout: 15_000 });
    await page.getByText('event: tick').waitFor({ timeout: 15_000 });

    await recorder.settled();
    const data = recorder.responses.find((r) => new URL(r.url).pathname === '/data');
    expect(data).toMatchObject({ status: 200, body: DATA });
    expect(data?.headers['content-type']).toBe('application/json');
    expect(recorder.responses.map((r) => new URL(r.url).pathname)).toEqual(
      expect.arrayContaining(['/', '/app.js', '/data']),
    );
    expect(recorder.responses.some((r) => r.url.endsWith('/events'))).toBe(false);

    const file = await screenshot(page, path.join(dir, 'shots', 'kit.png'));
    const png = await fs.readFile(file);
    expect(png.subarray(0, 8)).toEqual(
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    );
  });
});
