// The hub dashboard in a real browser (Debian's Chromium through playwright-core) against the
// kit: a hub cluster and two EKS followers with their agents, the hub serving the page and its
// API from its own caches. Viewers sign in with ServiceAccount tokens of the hub cluster, so
// TokenReview and SubjectAccessReview are the real API server's.
//
// Screenshots are taken on every run (into a temp dir); MIRRORHUB_UPDATE_SCREENSHOTS=1 writes
// them to docs/images instead, which is how the ones in docs/ were made.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { MirrorDetail, Snapshot, Where } from '@mirrorhub/hub/dashboard/types';

import {
  launchBrowser,
  recordResponses,
  screenshot,
  type LaunchedBrowser,
} from './support/browser.js';
import { eventually } from './support/eventually.js';
import {
  clusterSecretMirror,
  FOLLOWERS,
  HUB,
  MultiCluster,
  secretMirror,
  SYSTEM_NS,
} from './support/multicluster.js';
import {
  clusterViewerToken,
  namespaceViewerToken,
  resignToken,
  serviceAccountToken,
} from './support/viewers.js';

const SECRET = 'dashboard-secret-value-7f3a9c';
const TEAM_SECRET = 'team-a-password-51e2';
const SHOTS =
  process.env['MIRRORHUB_UPDATE_SCREENSHOTS'] === '1'
    ? join(dirname(fileURLToPath(import.meta.url)), '../../docs/images')
    : mkdtempSync(join(tmpdir(), 'mirrorhub-shots-'));

describe('the hub dashboard in a browser', () => {
  let m: MultiCluster;
  let browser: LaunchedBrowser;
  let base: string;
  let platform: string;
  let lead: string;
  /** Every event-stream byte the tests read, scanned at the end. */
  const streamed: string[] = [];

  async function api<T>(
    path: string,
    bearer: string | undefined,
  ): Promise<{ status: number; body: T; headers: Headers }> {
    const res = await fetch(base + path, {
      headers: bearer ? { authorization: `Bearer ${bearer}` } : {},
    });
    const text = await res.text();
    streamed.push(text);
    return {
      status: res.status,
      body: (text ? JSON.parse(text) : undefined) as T,
      headers: res.headers,
    };
  }

  async function signIn(page: Page, bearer: string, hash = '#/'): Promise<void> {
    await page.goto(`${base}/${hash}`);
    await page.fill('input[name=token]', bearer);
    await page.click('form#signin button[type=submit]');
  }

  beforeAll(async () => {
    m = await MultiCluster.start({
      followers: FOLLOWERS.slice(0, 2),
      hub: { healthPort: 0, healthHost: '127.0.0.1', dashboardAuthTtlMs: 5_000 },
    });
    base = `http://127.0.0.1:${m.hub!.port}`;
    await m.ensureNamespace(HUB, 'certs');
    await m.putSecret(HUB, 'certs', 'wildcard', { 'tls.crt': SECRET, 'tls.key': SECRET });
    for (const ns of ['app-a', 'app-b']) await m.ensureNamespace('follower-a', ns);
    for (const ns of ['app-a', 'app-c']) await m.ensureNamespace('follower-b', ns);
    // Someone else's Secret where a copy would go: a Conflict the matrix must show.
    await m.putSecret('follower-b', 'app-c', 'wildcard', { mine: 'not mirrorhub' });
    await m.applyMirror(
      clusterSecretMirror('wildcard-tls', {
        source: { kind: 'Secret', name: 'wildcard', namespace: 'certs' },
        destination: {
          clusters: { selector: { matchLabels: { env: 'prod' } } },
          namespaces: ['app-.+'],
        },
      }),
    );
    for (const team of ['team-a', 'team-b']) {
      await m.ensureNamespace(HUB, team);
      await m.ensureNamespace(HUB, `${team}-dev`);
      await m.putSecret(HUB, team, 'db', { password: TEAM_SECRET });
      await m.applyMirror(
        secretMirror(team, 'db', {
          source: { kind: 'Secret', name: 'db' },
          destination: { namespaces: [`${team}-.+`] },
        }),
      );
    }
    platform = await clusterViewerToken(m.kc(HUB), SYSTEM_NS, 'platform');
    lead = await namespaceViewerToken(m.kc(HUB), 'team-a', 'lead');
    await m.mirrorStatus(
      'ClusterSecretMirror',
      'wildcard-tls',
      undefined,
      (s) => {
        expect(s.status?.counts).toMatchObject({ synced: 3, conflicts: 1 });
      },
      60_000,
    );
    for (const team of ['team-a', 'team-b']) {
      await m.mirrorStatus('SecretMirror', 'db', team, (s) =>
        expect(s.status?.phase).toBe('Active'),
      );
    }
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await m?.stop();
  });

  it('refuses a request without a token, with a garbage, a revoked or an expired token', async () => {
    const none = await api<{ error: string }>('/api/v1/snapshot', undefined);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(none.body.error).toMatch(/Authorization: Bearer/);
    const garbage = await api<{ error: string }>('/api/v1/snapshot', 'not-a-token');
    expect(garbage.status).toBe(401);
    expect(garbage.body.error).toMatch(/not accepted by the hub cluster/);
    // A bound token stops being valid once its ServiceAccount is gone.
    const gone = await serviceAccountToken(m.kc(HUB), SYSTEM_NS, 'leaver');
    expect((await api('/api/v1/snapshot', gone)).status).toBe(200);
    await m.core(HUB).deleteNamespacedServiceAccount({ namespace: SYSTEM_NS, name: 'leaver' });
    await eventually(async () => expect((await api('/api/v1/snapshot', gone)).status).toBe(401), {
      timeoutMs: 20_000, // the review of the live token is trusted for dashboardAuthTtlMs
    });

    // An expired token: the same claims signed with the API server's key, first as they are
    // (accepted: the signing is right), then with an expiry an hour ago.
    const key = join(m.kit.cluster(HUB).dir, 'pki/sa.key');
    const live = await serviceAccountToken(m.kc(HUB), SYSTEM_NS, 'platform');
    expect(
      (
        await api(
          '/api/v1/snapshot',
          resignToken(live, key, (c) => c),
        )
      ).status,
    ).toBe(200);
    const past = Math.floor(Date.now() / 1000) - 3600;
    const expired = resignToken(live, key, (c) => ({
      ...c,
      iat: past - 600,
      nbf: past - 600,
      exp: past,
    }));
    const refused = await api<{ error: string }>('/api/v1/snapshot', expired);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toMatch(/expired/);

    const page = await browser.newPage();
    await signIn(page, 'not-a-token');
    await expect
      .poll(() => page.textContent('[data-testid=signin-error]'), { timeout: 10_000 })
      .toMatch(/not accepted/);
    await page.close();
  });

  it('shows the overview numbers the clusters hold', async () => {
    const snap = (await api<Snapshot>('/api/v1/snapshot', platform)).body;
    expect(snap.whoami).toMatchObject({ scope: 'cluster', clusters: true });
    expect(snap.overview.clusters).toEqual({ reachable: 2, total: 2 });
    expect(snap.overview.agents).toEqual({ healthy: 2, total: 2 });
    expect(snap.overview.mirrors.total).toBe(3);
    // What the clusters hold, read directly: 3 copies of wildcard, 1 of each team's db.
    const copies =
      (await m.copies('follower-a', 'wildcard')).length +
      (await m.copies('follower-b', 'wildcard')).length +
      (await m.copies(HUB, 'db')).length;
    expect(snap.overview.copies.synced).toBe(copies);
    expect(snap.overview.copies.conflicts).toBe(1);

    const page = await browser.newPage();
    // Console errors include CSP refusals: the page must run under its own policy.
    const errors: string[] = [];
    page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()));
    page.on('pageerror', (err) => errors.push(err.message));
    await signIn(page, platform);
    await expect.poll(() => page.textContent('[data-testid=overview-clusters]')).toContain('2/2');
    expect(await page.textContent('[data-testid=overview-agents]')).toContain('2/2');
    expect(await page.textContent('[data-testid=overview-mirrors]')).toContain('3');
    expect(await page.textContent('[data-testid=overview-synced]')).toContain(String(copies));
    expect(await page.textContent('[data-testid=overview-conflicts]')).toContain('1');
    await expect
      .poll(() => page.locator('[data-testid=attention] li[data-kind=Conflict]').count())
      .toBe(1);
    await screenshot(page, join(SHOTS, 'dashboard-overview.png'));
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows a namespace created in a follower in the mirror detail without a reload', async () => {
    const page = await browser.newPage();
    await signIn(page, platform, '#/mirror/ClusterSecretMirror/_/wildcard-tls');
    const section = page.locator('[data-testid=mirror-detail] section[data-cluster=follower-a]');
    await expect
      .poll(() => section.locator('tr[data-namespace=app-a]').count(), { timeout: 15_000 })
      .toBe(1);
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    await m.ensureNamespace('follower-a', 'app-new');
    await expect
      .poll(() => section.locator('tr[data-namespace=app-new][data-state=Synced]').count(), {
        timeout: 30_000,
      })
      .toBe(1);
    expect(
      await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded),
    ).toBe(true);
    await screenshot(page, join(SHOTS, 'dashboard-mirror.png'));
    await page.close();
  });

  it('shows the conflict in the matrix and finds every copy by name', async () => {
    const page = await browser.newPage();
    await signIn(page, platform, '#/matrix');
    const cell = (cluster: string) =>
      page.locator(`td[data-mirror="ClusterSecretMirror//wildcard-tls"][data-cluster=${cluster}]`);
    await expect
      .poll(() => cell('follower-b').getAttribute('data-state'), { timeout: 15_000 })
      .toBe('conflict');
    expect(await cell('follower-a').getAttribute('data-state')).toBe('synced');
    // Cluster columns grouped by a MirrorCluster label, as teams with 20+ clusters group them.
    await page.selectOption('select', 'env');
    await expect.poll(() => page.locator('th[data-group=prod]').count()).toBe(1);
    expect(await cell('follower-b').getAttribute('data-state')).toBe('conflict');
    await screenshot(page, join(SHOTS, 'dashboard-matrix.png'));

    const w = (await api<Where>('/api/v1/where?name=wildcard', platform)).body;
    expect(w.items.map((i) => `${i.cluster}/${i.namespace}=${i.state}`)).toEqual([
      'follower-a/app-a=Synced',
      'follower-a/app-b=Synced',
      'follower-a/app-new=Synced',
      'follower-b/app-a=Synced',
      'follower-b/app-c=Conflict',
    ]);
    await page.goto(`${base}/#/where`);
    await page.fill('input[name=where]', 'wildcard');
    await page.press('input[name=where]', 'Enter');
    await expect.poll(() => page.locator('tr[data-testid=where-row]').count()).toBe(5);
    expect(
      await page
        .locator('tr[data-testid=where-row][data-cluster=follower-b][data-namespace=app-c]')
        .getAttribute('data-state'),
    ).toBe('Conflict');
    await page.close();
  });

  it('turns an unreachable follower red with its reason, and back when it returns', async () => {
    const page = await browser.newPage();
    await signIn(page, platform, '#/clusters');
    const row = page.locator('tr[data-cluster=follower-a]');
    await expect.poll(() => row.getAttribute('data-reachable'), { timeout: 15_000 }).toBe('true');
    await m.kit.cluster('follower-a').stopApiServer();
    try {
      await expect
        .poll(() => row.getAttribute('data-reachable'), { timeout: 30_000 })
        .toBe('false');
      expect(await row.getAttribute('class')).toContain('bad');
      expect(await row.locator('[data-testid=cluster-error]').textContent()).toMatch(
        /ECONNREFUSED/,
      );
      await page.goto(`${base}/#/`);
      await expect
        .poll(() =>
          page.locator('[data-testid=attention] li[data-ref="cluster:follower-a"]').count(),
        )
        .toBe(1);
    } finally {
      await m.kit.cluster('follower-a').startApiServer();
    }
    await page.goto(`${base}/#/clusters`);
    await expect.poll(() => row.getAttribute('data-reachable'), { timeout: 60_000 }).toBe('true');
    await page.close();
  });

  it('shows a namespace-scoped identity only its namespace, and 403 for another', async () => {
    const snap = (await api<Snapshot>('/api/v1/snapshot', lead)).body;
    expect(snap.whoami).toMatchObject({
      scope: 'namespaces',
      namespaces: ['team-a'],
      clusters: false,
    });
    expect(snap.mirrors.map((r) => r.key)).toEqual(['SecretMirror/team-a/db']);
    expect(snap.clusters).toEqual([]); // team-a's mirror reaches only the hub's own cluster
    const own = await api<MirrorDetail>('/api/v1/mirrors/SecretMirror/team-a/db', lead);
    expect(own.status).toBe(200);
    expect(own.body.perCluster[0]?.copies).toEqual([{ namespace: 'team-a-dev', state: 'Synced' }]);
    for (const path of [
      '/api/v1/mirrors/SecretMirror/team-b/db',
      '/api/v1/mirrors/ClusterSecretMirror/_/wildcard-tls',
    ]) {
      const other = await api<{ error: string }>(path, lead);
      expect(other.status).toBe(403);
      expect(other.body.error).toMatch(/may not list/);
    }
    expect((await api<Where>('/api/v1/where?name=wildcard', lead)).body.items).toEqual([]);

    const page = await browser.newPage();
    await signIn(page, lead, '#/mirrors');
    await expect.poll(() => page.locator('tr[data-mirror]').count(), { timeout: 15_000 }).toBe(1);
    await page.goto(`${base}/#/mirror/SecretMirror/team-b/db`);
    await expect.poll(() => page.textContent('body')).toMatch(/may not/);
    await page.close();
  });

  it("names to a namespace viewer no other tenant's delivery, in its JSON or its event stream", async () => {
    // team-b's mirror plants copies named `planted` in team-a's namespaces; team-a's own mirror
    // of that name meets them, and the agent's report says whose delivery they are.
    const planting = { source: { kind: 'Secret' as const, name: 'db' }, name: 'planted' };
    await m.applyMirror(
      secretMirror('team-b', 'squat', {
        source: planting.source,
        destination: { namespaces: ['team-a', 'team-a-dev'], name: planting.name },
      }),
    );
    await m.mirrorStatus('SecretMirror', 'squat', 'team-b', (s) =>
      expect(s.status?.counts?.synced).toBe(2),
    );
    const ctrl = new AbortController();
    const res = await fetch(`${base}/api/v1/watch`, {
      headers: { authorization: `Bearer ${lead}` },
      signal: ctrl.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let stream = '';
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        stream += new TextDecoder().decode(value);
      }
    })().catch(() => undefined);
    await m.applyMirror(
      secretMirror('team-a', 'cache', {
        source: planting.source,
        destination: { namespaces: ['team-a', 'team-a-dev'], name: planting.name },
      }),
    );
    await m.mirrorStatus('SecretMirror', 'cache', 'team-a', (s) => {
      expect(s.status?.counts?.conflicts).toBe(2);
      // What team-a reads with kubectl names no delivery of team-b's either.
      expect(JSON.stringify(s.status)).not.toMatch(/team-b|squat/);
    });
    const detail = '/api/v1/mirrors/SecretMirror/team-a/cache';
    // The case is real: who may see every mirror reads the agent's words, naming team-b's delivery.
    await eventually(async () => {
      const full = await api<MirrorDetail>(detail, platform);
      expect(JSON.stringify(full.body.perCluster)).toMatch(/sm-team-b-squat-/);
    });
    await eventually(() => expect(stream.match(/event: changed/g)?.length ?? 0).toBeGreaterThan(1));
    ctrl.abort();
    await reading;

    const own = await api<MirrorDetail>(detail, lead);
    expect(own.status).toBe(200);
    const copies = own.body.perCluster.flatMap((c) => c.copies);
    expect(copies).toEqual([
      {
        namespace: 'team-a',
        state: 'Conflict',
        message: "Secret team-a/planted is a copy of another mirror's MirrorDelivery",
      },
      {
        namespace: 'team-a-dev',
        state: 'Conflict',
        message: expect.stringMatching(
          /^Conflict: details in MirrorDelivery sm-team-a-cache-[0-9a-f]+ \(namespace mirrorhub-system of cluster hub\), readable by its administrators$/,
        ),
      },
    ]);
    const answers = [
      own.body,
      (await api<Snapshot>('/api/v1/snapshot', lead)).body,
      (await api<Where>('/api/v1/where?name=planted', lead)).body,
    ];
    expect(answers[2]).toMatchObject({
      items: [{ namespace: 'team-a' }, { namespace: 'team-a-dev' }],
    });
    const seen = JSON.stringify(answers) + stream;
    for (const name of ['team-b', 'squat']) expect(seen).not.toContain(name);
  });

  it('never lets a secret value reach the page, its responses or its event stream', async () => {
    const page = await browser.newPage();
    const rec = recordResponses(page);
    await signIn(page, platform);
    const pages: Array<[string, string]> = [
      ['#/', '[data-testid=overview-clusters]'],
      ['#/clusters', 'tr[data-cluster]'],
      ['#/mirrors', 'tr[data-mirror]'],
      ['#/matrix', 'td[data-cluster]'],
      ['#/mirror/ClusterSecretMirror/_/wildcard-tls', 'section[data-cluster] tr[data-namespace]'],
      ['#/where?name=wildcard', 'tr[data-testid=where-row]'],
    ];
    for (const [hash, shown] of pages) {
      await page.goto(`${base}/${hash}`);
      await page.waitForSelector(shown);
      streamed.push(await page.content());
    }
    // The event stream, read while the source changes (its renewal is news to every viewer).
    const ctrl = new AbortController();
    const res = await fetch(`${base}/api/v1/watch`, {
      headers: { authorization: `Bearer ${platform}` },
      signal: ctrl.signal,
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let stream = '';
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        stream += decoder.decode(value);
      }
    })().catch(() => undefined);
    await m.putSecret(HUB, 'certs', 'wildcard', { 'tls.crt': SECRET + '-2', 'tls.key': SECRET });
    await eventually(() => expect(stream.match(/event: changed/g)?.length ?? 0).toBeGreaterThan(1));
    ctrl.abort();
    await reading;
    streamed.push(stream);
    await rec.settled();
    rec.stop();
    expect(rec.responses.length).toBeGreaterThan(5);
    for (const r of rec.responses) {
      if (r.url.includes('/api/')) expect(r.headers['cache-control']).toBe('no-store');
      expect(r.headers['content-security-policy']).toContain("default-src 'none'");
      streamed.push(r.body);
    }
    const everything = streamed.join('\n');
    for (const value of [SECRET, TEAM_SECRET, Buffer.from(SECRET).toString('base64')]) {
      expect(everything).not.toContain(value);
    }
    expect(everything).not.toContain(platform);
    expect(everything).not.toContain(lead);
    await page.close();
  });

  it('lists a mirror waiting for its source as attention (retrying) and colours an Error mirror failing in the matrix', async () => {
    await m.ensureNamespace(HUB, 'ops');
    await m.ensureNamespace(HUB, 'ops-app');
    await m.putSecret(HUB, 'ops', 'token', { t: 'x' });
    // A source that does not exist yet: Pending, retried (Reconciling), yet a person may be the fix.
    await m.applyMirror(
      secretMirror('ops', 'later', {
        source: { kind: 'Secret', name: 'not-yet' },
        destination: { namespaces: ['ops-app'] },
      }),
    );
    // Synced first, then an invalid spec: Error, its last copies kept but no longer kept in sync.
    await m.applyMirror(
      secretMirror('ops', 'token', {
        source: { kind: 'Secret', name: 'token' },
        destination: { namespaces: ['ops-app'] },
      }),
    );
    await m.mirrorStatus('SecretMirror', 'token', 'ops', (s) =>
      expect(s.status?.phase).toBe('Active'),
    );
    const token = await m.getMirror('SecretMirror', 'token', 'ops');
    await m.applyMirror({
      ...token!,
      spec: { ...token!.spec, destination: { namespaces: ['ops-('] } },
    });
    await m.mirrorStatus('SecretMirror', 'token', 'ops', (s) =>
      expect(s.status?.phase).toBe('Error'),
    );
    await m.mirrorStatus('SecretMirror', 'later', 'ops', (s) =>
      expect(s.status?.conditions?.find((c) => c.type === 'Reconciling')?.reason).toBe(
        'SourceNotFound',
      ),
    );

    const page = await browser.newPage();
    await signIn(page, platform);
    const item = (ref: string) => page.locator(`[data-testid=attention] li[data-ref="${ref}"]`);
    await expect
      .poll(() => item('SecretMirror/ops/later').getAttribute('data-terminal'), { timeout: 15_000 })
      .toBe('false');
    expect(await item('SecretMirror/ops/later').getAttribute('data-kind')).toBe('MirrorPending');
    expect(await item('SecretMirror/ops/later').textContent()).toContain('not-yet');
    expect(await item('SecretMirror/ops/later').textContent()).toContain('retrying');
    expect(await item('SecretMirror/ops/token').getAttribute('data-kind')).toBe('MirrorError');
    expect(await item('SecretMirror/ops/token').getAttribute('data-terminal')).toBe('true');

    await page.goto(`${base}/#/matrix`);
    const cell = page.locator(`td[data-mirror="SecretMirror/ops/token"][data-cluster=${HUB}]`);
    await expect.poll(() => cell.getAttribute('data-state'), { timeout: 15_000 }).toBe('failing');
    await page.close();
  });
});
