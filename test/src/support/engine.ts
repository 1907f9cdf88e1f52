import type { KubeConfig } from '@kubernetes/client-node';

import { createAgent, type Agent, type AgentConfig } from '@mirrorhub/agent/agent';
import { createHub, type Hub, type HubConfig } from '@mirrorhub/hub/hub';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import { createLogger, type Logger } from '@mirrorhub/shared';
import { createStandalone, type Standalone } from '@mirrorhub/standalone/standalone';

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

/**
 * How hub and agent run, as the two install modes do: `separate` (the hub chart and the agent
 * chart, two processes) or `one-process` (the hub chart with localAgent.inProcess: standalone/).
 * Here both live in the test's process either way; what differs is the wiring. The engine suites
 * run in both (scripts/run.mjs sets MIRRORHUB_ENGINE_MODE for the second run).
 */
export type EngineMode = 'separate' | 'one-process';

export function engineMode(env: Record<string, string | undefined> = process.env): EngineMode {
  const m = env['MIRRORHUB_ENGINE_MODE'] ?? 'separate';
  if (m !== 'separate' && m !== 'one-process')
    throw new Error(`MIRRORHUB_ENGINE_MODE must be separate or one-process; got "${m}"`);
  return m;
}

export interface EngineOptions {
  hub?: Partial<HubConfig>;
  agent?: Partial<AgentConfig>;
  /** Reuse a running kit (several suites in one file); default: start a one-cluster kit. */
  kit?: Kit;
  /** Default: engineMode(), from MIRRORHUB_ENGINE_MODE. */
  mode?: EngineMode;
}

/**
 * One real cluster (kube-apiserver + etcd), the CRDs, the agent namespace, and the hub and one
 * agent running in this process exactly as their main.ts wires them (or, in one-process mode, as
 * standalone/ does), with short intervals.
 */
export class Engine extends ClusterObjects {
  readonly logs = new LogSink();
  hub: Hub | undefined;
  agent: Agent | undefined;
  readonly mode: EngineMode;
  /**
   * one-process: the running process, the agent settings for its next start, and the hub's
   * (set while the hub is meant to run: a stopped agent then restarts the whole process).
   */
  private standalone: Standalone | undefined;
  private nextAgent: Partial<AgentConfig> = {};
  private lastHub: Partial<HubConfig> | undefined;
  private constructor(
    readonly kit: Kit,
    kc: KubeConfig,
    private readonly opts: EngineOptions,
    private readonly ownsKit: boolean,
  ) {
    super(kc);
    this.mode = opts.mode ?? engineMode();
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

  /**
   * one-process: starts hub and agent together (with the agent settings of the last
   * startAgent), as the process does; stopping either half later stops both.
   */
  async startHub(extra: Partial<HubConfig> = {}): Promise<void> {
    if (this.mode === 'one-process') {
      this.lastHub = extra;
      await this.startProcess();
      return;
    }
    this.hub = createHub(this.hubConfig(extra));
    await this.hub.start();
  }

  async stopHub(): Promise<void> {
    if (this.mode === 'one-process') {
      this.lastHub = undefined;
      await this.stopProcess();
      return;
    }
    await this.hub?.stop();
    this.hub = undefined;
  }

  /** one-process: the settings of the agent half; the process starts with the hub (startHub). */
  async startAgent(extra: Partial<AgentConfig> = {}): Promise<void> {
    if (this.mode === 'one-process') {
      this.nextAgent = extra;
      if (this.lastHub && !this.standalone) await this.startProcess();
      return;
    }
    this.agent = createAgent(this.agentConfig(extra));
    await this.agent.start();
  }

  async stopAgent(): Promise<void> {
    if (this.mode === 'one-process') {
      await this.stopProcess();
      return;
    }
    await this.agent?.stop();
    this.agent = undefined;
  }

  private async startProcess(): Promise<void> {
    if (this.standalone) throw new Error('Engine: the one process is already running');
    const s = createStandalone({
      hub: this.hubConfig(this.lastHub),
      agent: this.agentConfig(this.nextAgent),
    });
    await s.start();
    this.standalone = s;
    this.hub = s.hub;
    this.agent = s.agent;
  }

  private async stopProcess(): Promise<void> {
    await this.standalone?.stop();
    this.standalone = undefined;
    this.hub = undefined;
    this.agent = undefined;
  }

  async stop(): Promise<void> {
    await this.stopHub();
    await this.stopAgent();
    if (this.ownsKit) await this.kit.stop();
  }
}

export { clusterSecretMirror, secretMirror, SYSTEM_NS } from './objects.js';
