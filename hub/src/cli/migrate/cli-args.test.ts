import { describe, expect, it } from 'vitest';
import { parseCommandLine } from '../cli.js';

describe('mirrorhub migrate: the command line', () => {
  it('reads its flags', () => {
    expect(
      parseCommandLine(['migrate', '--plan', '--continue', '--source-namespace', 'secrets'], {}),
    ).toMatchObject({
      command: 'migrate',
      plan: true,
      continueOnRefusal: true,
      sourceNamespace: 'secrets',
    });
    expect(parseCommandLine(['migrate', '--out', 'dir'], {})).toMatchObject({
      out: 'dir',
      plan: false,
      continueOnRefusal: false,
      sourceNamespace: 'mirrorhub-system',
    });
  });

  it('reads --kubed-context mappings', () => {
    const args = parseCommandLine(
      ['migrate', '--kubed-context', 'eu=eu-1', '--kubed-context', 'prod-ctx=us-1/apps'],
      {},
    );
    expect([...args.kubedContexts]).toEqual([
      ['eu', { cluster: 'eu-1' }],
      ['prod-ctx', { cluster: 'us-1', namespace: 'apps' }],
    ]);
  });

  it.each<[string[], RegExp]>([
    [['migrate', '--kubed-context', 'eu'], /use CONTEXT=MIRRORCLUSTER/],
    [['migrate', '--kubed-context', 'eu=EU'], /use CONTEXT=MIRRORCLUSTER/],
    [['migrate', '--kubed-context', 'eu=a', '--kubed-context', 'eu=b'], /mapped twice/],
    [['status', '--kubed-context', 'eu=a'], /applies to migrate only/],
    [['migrate', 'x'], /migrate takes no arguments/],
    [['migrate', '-n', 'a'], /--namespace does not apply to migrate/],
    [['migrate', '-o', 'json'], /--output does not apply to migrate/],
    [['migrate', '--out', 'd', '--plan'], /exclude each other/],
    [['migrate', '--out', ''], /--out needs a value/],
    [['migrate', '--source-namespace', ''], /--source-namespace needs a value/],
    [['status', '--plan'], /--plan applies to migrate only/],
    [['where', 'x', '--out', 'd'], /--out applies to migrate only/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseCommandLine(argv, {})).toThrow(message);
  });
});
