import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { ExecPlugin, type ExecConfig } from './credentials.js';

/** A plugin that counts its runs and prints token-<run> expiring `expires` (ISO) or never. */
function plugin(opts: { expires?: string; output?: string; exit?: number } = {}): {
  exec: ExecConfig;
  runs: () => number;
} {
  const dir = mkdtempSync(join(tmpdir(), 'mirrorhub-exec-'));
  const script = join(dir, 'plugin.mjs');
  writeFileSync(
    script,
    `import fs from 'node:fs';
const f = ${JSON.stringify(join(dir, 'runs'))};
const n = Number(fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '0') + 1;
fs.writeFileSync(f, String(n));
fs.writeFileSync(f + '-info', process.env.KUBERNETES_EXEC_INFO ?? '');
${opts.exit ? `process.exit(${opts.exit});` : ''}
process.stdout.write(${
      opts.output !== undefined
        ? JSON.stringify(opts.output)
        : `JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
  status: { token: 'token-' + n${opts.expires ? `, expirationTimestamp: ${JSON.stringify(opts.expires)}` : ''} } })`
    });
`,
  );
  return {
    exec: {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: process.execPath,
      args: [script],
      interactiveMode: 'Never',
    },
    runs: () => Number(readFileSync(join(dir, 'runs'), 'utf8')),
  };
}

describe('ExecPlugin', () => {
  it('keeps a credential until shortly before its expirationTimestamp, then runs the plugin again', async () => {
    const start = Date.parse('2026-01-01T00:00:00Z');
    let now = start;
    const p = plugin({ expires: '2026-01-01T00:15:00Z' });
    const x = new ExecPlugin(p.exec, { now: () => now, stderr: 'ignore' });
    expect((await x.credential()).token).toBe('token-1');
    now = start + 13 * 60_000;
    expect((await x.credential()).token).toBe('token-1');
    // Within the last minute of a 15-minute credential: renewed before the API server refuses it.
    now = start + 14 * 60_000 + 1;
    expect((await x.credential()).token).toBe('token-2');
    expect(p.runs()).toBe(2);
  });

  it('keeps a credential without expiry until it is refused, and forgets only the refused one', async () => {
    const p = plugin();
    const x = new ExecPlugin(p.exec, { stderr: 'ignore' });
    const [a, b] = await Promise.all([x.credential(), x.credential()]);
    expect([a.token, b.token]).toEqual(['token-1', 'token-1']);
    expect(p.runs()).toBe(1);
    expect((await x.credential()).token).toBe('token-1');
    expect(x.refused('token-1')).toBe(true);
    expect((await x.credential()).token).toBe('token-2');
    // A 401 for a token already replaced does not throw the new one away.
    expect(x.refused('token-1')).toBe(true);
    expect((await x.credential()).token).toBe('token-2');
    expect(p.runs()).toBe(2);
  });

  it('tells the plugin it runs non-interactively, with the ExecCredential version asked for', async () => {
    const p = plugin();
    const x = new ExecPlugin(p.exec, { stderr: 'ignore' });
    await x.credential();
    const info = JSON.parse(
      readFileSync(join(p.exec.args![0]!, '..', 'runs-info'), 'utf8'),
    ) as Record<string, unknown>;
    expect(info).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
  });

  it.each([
    [{ exit: 3 }, /failed \(exit code 3/],
    [{ output: 'not json' }, /not an ExecCredential/],
    [
      {
        output:
          '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"t"}}',
      },
      /asks for an ExecCredential of client.authentication.k8s.io\/v1/,
    ],
    [
      {
        output:
          '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{}}',
      },
      /neither a token nor a client certificate/,
    ],
  ])('says what is wrong with a plugin that %j', async (opts, message) => {
    const x = new ExecPlugin(plugin(opts).exec, { stderr: 'ignore' });
    await expect(x.credential()).rejects.toThrow(message);
  });

  it("runs a relative command with a slash from the kubeconfig's directory, as client-go does", async () => {
    const p = plugin();
    const dir = mkdtempSync(join(tmpdir(), 'mirrorhub-kubeconfig-'));
    mkdirSync(join(dir, 'bin'));
    writeFileSync(
      join(dir, 'bin', 'get-token'),
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(p.exec.args![0])}\n`,
      { mode: 0o755 },
    );
    const x = new ExecPlugin(
      { ...p.exec, command: './bin/get-token', args: [] },
      { dir, stderr: 'ignore' },
    );
    expect((await x.credential()).token).toBe('token-1');
  });

  it('names a plugin that is not installed', async () => {
    const x = new ExecPlugin({ command: 'no-such-plugin-9f2c' }, { stderr: 'ignore' });
    await expect(x.credential()).rejects.toThrow(/"no-such-plugin-9f2c" was not found: install it/);
  });
});
