import type { KubeConfig } from '@kubernetes/client-node';

import { createAgent, type Agent, type AgentConfig } from '@mirrorhub/agent/agent';
import { createHub, type Hub, type HubConfig } from '@mirrorhub/hub/hub';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import { createLogger, type Logger } from '@mirrorhub/shared';

import { installCrds } from './crds.js';
import { ClusterObjects, SYSTEM_NS } from './objects.js';
import { TEST_HUB_KEY } from './signing.js';

/** Every log line hub and agents wrote, to prove no secret value ever reaches a log. */
export class LogSink {
  readonly lines: string[] = [];
  write(line: string): void {
    this.lines.push(line);
  }
  text(): string {
    return this.lines.join('');
  }
}

export interface EngineOptions {
  hub?: Partial<HubConfig>;
  agent?: Partial<AgentConfig>;
  /** Reuse a running kit (several suites in one file); default: start a one-cluster kit. */
  kit?: Kit;
}

/**
 * One real cluster (kube-apiserver + etcd), the CRDs, the agent namespace, and the hub and one
 * agent running in this process exactly as their main.ts wires them, with short intervals.
 */
export class Engine extends ClusterObjects {
  readonly logs = new LogSink();
  hub: Hub | undefined;
  agent: Agent | undefined;
  private constructor(
    readonly kit: Kit,
    kc: KubeConfig,
    private readonly opts: EngineOptions,
    private readonly ownsKit: boolean,
  ) {
    super(kc);
  }

  static async start(opts: EngineOptions = {}): Promise<Engine> {
    const kit = opts.kit ?? (await startKit({ clusters: ['hub'], aws: false }));
    const kc = kit.cluster('hub').kubeConfig();
    const e = new Engine(kit, kc, opts, !opts.kit);
    await installCrds(kc, 'mirrorhub-hub');
    await e.ensureNamespace(SYSTEM_NS);
    await e.startAgent();
    await e.startHub();
    return e;
  }

  logger(component: string): Logger {
    return createLogger({ level: 'debug', base: { component }, destination: this.logs });
  }

  hubConfig(extra: Partial<HubConfig> = {}): HubConfig {
    return {
      kubeConfig: this.kc,
      clusterName: 'hub',
      namespace: SYSTEM_NS,
      agentNamespace: SYSTEM_NS,
      identity: 'hub-test',
      version: 'test',
      logger: this.logger('hub'),
      leaderElection: false,
      signingKey: TEST_HUB_KEY.privateKeyPem,
      ...this.opts.hub,
      ...extra,
    } as HubConfig;
  }

  agentConfig(extra: Partial<AgentConfig> = {}): AgentConfig {
    return {
      kubeConfig: this.kc,
      namespace: SYSTEM_NS,
      clusterName: 'hub',
      hubPublicKeys: TEST_HUB_KEY.publicKeyPem,
      version: 'test',
      logger: this.logger('agent'),
      ...this.opts.agent,
      ...extra,
    } as AgentConfig;
  }

  async startHub(extra: Partial<HubConfig> = {}): Promise<Hub> {
    this.hub = createHub(this.hubConfig(extra));
    await this.hub.start();
    return this.hub;
  }

  async stopHub(): Promise<void> {
    await this.hub?.stop();
    this.hub = undefined;
  }

  async startAgent(extra: Partial<AgentConfig> = {}): Promise<Agent> {
    this.agent = createAgent(this.agentConfig(extra));
    await this.agent.start();
    return this.agent;
  }

  async stopAgent(): Promise<void> {
    await this.agent?.stop();
    this.agent = undefined;
  }

  async stop(): Promise<void> {
    await this.stopHub();
    await this.stopAgent();
    if (this.ownsKit) await this.kit.stop();
  }
}

export { clusterSecretMirror, secretMirror, SYSTEM_NS } from './objects.js';
