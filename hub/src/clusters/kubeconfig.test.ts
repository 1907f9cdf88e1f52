import type https from 'node:https';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { describe, expect, it } from 'vitest';
import { parseKubeconfig } from './kubeconfig.js';
import { ProxyHttpsAgent } from './egress-proxy.js';

const WHERE = 'Secret ops/follower (key "kubeconfig")';

function kubeconfig(user: string, cluster = 'certificate-authority-data: Q0EK'): string {
  return `apiVersion: v1
kind: Config
current-context: f
contexts:
  - name: f
    context: { cluster: f, user: hub }
clusters:
  - name: f
    cluster:
      server: https://10.0.0.1:6443
      ${cluster}
users:
  - name: hub
    user:
      ${user}
`;
}

describe('parseKubeconfig', () => {
  it('loads inline credentials, current context only', async () => {
    const r = parseKubeconfig(kubeconfig('token: abc.def'), WHERE);
    expect(r.ok).toBe(true);
    const kc = (r as { kubeConfig: KubeAccess }).kubeConfig;
    expect(kc.getCurrentCluster()?.server).toBe('https://10.0.0.1:6443');
    const opts: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    expect(opts.headers).toMatchObject({ Authorization: 'Bearer abc.def' });
  });

  it.each<[string, string, RegExp]>([
    [
      'an exec plugin',
      kubeconfig('exec: { command: /bin/sh, apiVersion: client.authentication.k8s.io/v1 }'),
      /exec credential plugin; the hub runs no programs/,
    ],
    ['an auth-provider', kubeconfig('auth-provider: { name: oidc }'), /auth-provider/],
    [
      'a token file',
      kubeconfig('tokenFile: /var/run/secrets/token'),
      /refers to a file \(tokenFile\)/,
    ],
    [
      'a client certificate path',
      kubeconfig('client-certificate: /etc/cert.pem'),
      /refers to a file \(client-certificate\)/,
    ],
    [
      'a CA path',
      kubeconfig('token: t', 'certificate-authority: /etc/ca.pem'),
      /cluster "f" refers to a file \(certificate-authority\)/,
    ],
    [
      'no current context',
      'apiVersion: v1\nkind: Config\ncontexts: []\n',
      /has no current-context/,
    ],
    ['not YAML', 'a: [b', /is not YAML/],
    [
      'a missing user',
      kubeconfig('token: t').replace('user: hub }', 'user: nobody }'),
      /names user "nobody"/,
    ],
  ])('refuses %s, saying so', (_, text, error) => {
    const r = parseKubeconfig(text, WHERE);
    expect(r.ok).toBe(false);
    const message = (r as { error: string }).error;
    expect(message).toMatch(error);
    expect(message).toContain('Secret ops/follower');
  });

  it('never echoes credentials in its errors', () => {
    const r = parseKubeconfig(kubeconfig('token: s3cr3t-token\n      exec: { command: x }'), WHERE);
    expect((r as { error: string }).error).not.toContain('s3cr3t');
  });

  describe('proxy', () => {
    const agentOf = async (r: ReturnType<typeof parseKubeconfig>) => {
      const opts: https.RequestOptions = {};
      await (r as { kubeConfig: KubeAccess }).kubeConfig.applyToHTTPSOptions(opts);
      return opts.agent;
    };

    it('tunnels through the cluster proxy-url, whatever NO_PROXY says (as client-go)', async () => {
      const r = parseKubeconfig(
        kubeconfig('token: abc.def', 'proxy-url: http://user:pw@squid.corp:3128'),
        WHERE,
        { proxy: { noProxy: '*' } },
      );
      const agent = await agentOf(r);
      expect(agent).toBeInstanceOf(ProxyHttpsAgent);
      expect((agent as ProxyHttpsAgent).proxyFor('10.0.0.1', 6443)?.host).toBe('squid.corp:3128');
    });

    it('takes the egress proxy without a proxy-url, and goes direct for NO_PROXY', async () => {
      const proxied = parseKubeconfig(kubeconfig('token: abc.def'), WHERE, {
        proxy: { httpsProxy: 'http://egress:3128' },
      });
      expect(await agentOf(proxied)).toBeInstanceOf(ProxyHttpsAgent);
      const direct = parseKubeconfig(kubeconfig('token: abc.def'), WHERE, {
        proxy: { httpsProxy: 'http://egress:3128', noProxy: '10.0.0.0/8' },
      });
      expect(await agentOf(direct)).toBeUndefined();
      expect(await agentOf(parseKubeconfig(kubeconfig('token: abc.def'), WHERE))).toBeUndefined();
    });

    it('refuses a SOCKS proxy-url, and says so without its credentials', () => {
      const r = parseKubeconfig(
        kubeconfig('token: abc.def', 'proxy-url: socks5://user:s3cret-pw@socks.corp:1080'),
        WHERE,
      );
      expect(r.ok).toBe(false);
      const error = (r as { error: string }).error;
      expect(error).toMatch(/proxy-url .*SOCKS is not supported/);
      expect(error).not.toContain('s3cret-pw');
    });
  });
});
