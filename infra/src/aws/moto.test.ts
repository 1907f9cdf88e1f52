import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { pidAlive } from '../components/cache.js';
import {
  accessKeyLookup,
  assumeRole,
  createRole,
  createUserWithAccessKey,
  getCallerIdentity,
  iamCall,
  lookupAccessKey,
  startMoto,
  trustPolicy,
  type MotoServer,
} from './moto.js';

describe('moto', () => {
  let moto: MotoServer;
  beforeAll(async () => {
    moto = await startMoto();
  }, 90_000);
  afterAll(async () => {
    await moto?.stop();
  });

  it('keeps accounts apart: a user in 111.. assumes roles in 222.. and 333..', async () => {
    const hub = await createUserWithAccessKey(moto.endpoint, {
      accountId: '111111111111',
      userName: 'mirrorhub-hub',
    });
    expect(hub.arn).toBe('arn:aws:iam::111111111111:user/mirrorhub-hub');
    expect(await getCallerIdentity(moto.endpoint, hub.credentials)).toMatchObject({
      account: '111111111111',
      arn: hub.arn,
    });

    for (const accountId of ['222222222222', '333333333333']) {
      const role = await createRole(moto.endpoint, {
        accountId,
        roleName: 'mirrorhub-follower',
        trustPolicy: trustPolicy({ principals: [hub.arn], externalId: 'x-1' }),
      });
      expect(role.arn).toBe(`arn:aws:iam::${accountId}:role/mirrorhub-follower`);
      const session = await assumeRole(moto.endpoint, {
        credentials: hub.credentials,
        roleArn: role.arn,
        sessionName: 'mirrorhub',
        externalId: 'x-1',
      });
      expect(await getCallerIdentity(moto.endpoint, session)).toMatchObject({
        account: accountId,
        arn: `arn:aws:sts::${accountId}:assumed-role/mirrorhub-follower/mirrorhub`,
      });
      expect(await lookupAccessKey(moto.endpoint, session.accessKeyId)).toEqual({
        accessKeyId: session.accessKeyId,
        secretAccessKey: session.secretAccessKey,
        sessionToken: session.sessionToken,
        active: true,
      });
    }
    expect(await lookupAccessKey(moto.endpoint, hub.credentials.accessKeyId)).toMatchObject({
      secretAccessKey: hub.credentials.secretAccessKey,
      sessionToken: undefined,
    });
    expect(await lookupAccessKey(moto.endpoint, 'AKIANOTKNOWN00000000')).toBeUndefined();
  });

  describe('accessKeyLookup', () => {
    afterEach(() => {
      vi.restoreAllMocks();
    });
    const dumps = () => {
      const spy = vi.spyOn(globalThis, 'fetch');
      return () => spy.mock.calls.filter(([url]) => String(url).endsWith('/data.json')).length;
    };

    it('answers concurrent lookups from shared dumps, and remembers session keys', async () => {
      const user = await createUserWithAccessKey(moto.endpoint, {
        accountId: '555555555555',
        userName: 'lookup-user',
      });
      const role = await createRole(moto.endpoint, {
        accountId: '666666666666',
        roleName: 'lookup-role',
        trustPolicy: trustPolicy({ principals: [user.arn] }),
      });
      const sessions = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          assumeRole(moto.endpoint, {
            credentials: user.credentials,
            roleArn: role.arn,
            sessionName: `lookup-${i}`,
          }),
        ),
      );
      const lookup = accessKeyLookup(moto.endpoint);
      const count = dumps();
      const found = await Promise.all(
        [user.credentials, ...sessions].map((c) => lookup(c.accessKeyId)),
      );
      expect(found.map((k) => k?.secretAccessKey)).toEqual(
        [user.credentials, ...sessions].map((c) => c.secretAccessKey),
      );
      expect(found[1]?.sessionToken).toBe(sessions[0]!.sessionToken);
      // Eleven lookups at once: the first dump, and one more for those asked while it was read.
      expect(count()).toBeLessThanOrEqual(2);
      const before = count();
      expect((await lookup(sessions[3]!.accessKeyId))?.secretAccessKey).toBe(
        sessions[3]!.secretAccessKey,
      );
      expect(count()).toBe(before);
    });

    it("reads a user's key anew: a deactivated key is inactive at once; a new session is found", async () => {
      const user = await createUserWithAccessKey(moto.endpoint, {
        accountId: '555555555555',
        userName: 'lookup-deactivated',
      });
      const lookup = accessKeyLookup(moto.endpoint);
      expect((await lookup(user.credentials.accessKeyId))?.active).toBe(true);
      await iamCall(moto.endpoint, '555555555555', 'UpdateAccessKey', {
        UserName: 'lookup-deactivated',
        AccessKeyId: user.credentials.accessKeyId,
        Status: 'Inactive',
      });
      expect((await lookup(user.credentials.accessKeyId))?.active).toBe(false);

      expect(await lookup('ASIANOTYETKNOWN00000')).toBeUndefined();
      const role = await createRole(moto.endpoint, {
        accountId: '666666666666',
        roleName: 'lookup-later',
        trustPolicy: trustPolicy({ principals: ['555555555555'] }),
      });
      const other = await createUserWithAccessKey(moto.endpoint, {
        accountId: '555555555555',
        userName: 'lookup-other',
      });
      const session = await assumeRole(moto.endpoint, {
        credentials: other.credentials,
        roleArn: role.arn,
        sessionName: 'later',
      });
      expect((await lookup(session.accessKeyId))?.sessionToken).toBe(session.sessionToken);
    });
  });

  it('a role name exists per account', async () => {
    await createRole(moto.endpoint, {
      accountId: '444444444444',
      roleName: 'dup',
      trustPolicy: trustPolicy({ principals: ['111111111111'] }),
    });
    await expect(
      createRole(moto.endpoint, {
        accountId: '444444444444',
        roleName: 'dup',
        trustPolicy: trustPolicy({ principals: ['111111111111'] }),
      }),
    ).rejects.toThrow(/EntityAlreadyExists/);
  });
});

describe('moto process handling', () => {
  it('stop() leaves no process behind', async () => {
    const m = await startMoto();
    expect(pidAlive(m.pid)).toBe(true);
    await m.stop();
    expect(pidAlive(m.pid)).toBe(false);
  }, 90_000);

  it('says how to get moto when there is neither python3 nor moto_server', async () => {
    const saved = { ...process.env };
    const empty = await mkdtemp(join(tmpdir(), 'mirrorhub-moto-empty-'));
    process.env.PATH = join(empty, 'bin');
    process.env.MIRRORHUB_CACHE = join(empty, 'cache'); // no cached venv either
    delete process.env.MIRRORHUB_MOTO;
    delete process.env.MIRRORHUB_PYTHON;
    try {
      await expect(startMoto()).rejects.toThrow(
        /^python3 not found on PATH: moto 5\.2\.1 is installed into a venv, .*apt-get install python3 python3-venv.* or set MIRRORHUB_MOTO/,
      );
    } finally {
      for (const k of ['PATH', 'MIRRORHUB_CACHE', 'MIRRORHUB_MOTO', 'MIRRORHUB_PYTHON']) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
      await rm(empty, { recursive: true, force: true });
    }
  });
});
