import { describe, expect, it } from 'vitest';

import { localPath, parseDashboardArgs } from './dashboard.js';

describe('parseDashboardArgs', () => {
  it("defaults to the chart's Service, any free local port and a browser when there is one", () => {
    expect(parseDashboardArgs([])).toEqual({
      hubNamespace: 'mirrorhub-system',
      service: 'mirrorhub-hub',
      servicePort: 'http',
      port: 0,
      browser: true,
      help: false,
    });
    expect(
      parseDashboardArgs([
        '--no-browser',
        '--port',
        '8080',
        '--context',
        'mgmt',
        '--service-port',
        '8080',
      ]),
    ).toMatchObject({ browser: false, port: 8080, context: 'mgmt', servicePort: '8080' });
  });

  it.each([
    [['--port', '70000'], /--port must be a port number/],
    [['--service', 'Hub_1'], /--service must be a Kubernetes name/],
    [['--hub-namespace', '../x'], /--hub-namespace must be a Kubernetes name/],
    [['--service-port', 'a:b'], /--service-port must be a port name or number/],
    [['status'], /dashboard takes no arguments/],
    [['--token', 'x'], /Unknown option '--token'/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseDashboardArgs(argv)).toThrow(message);
  });
});

describe('localPath', () => {
  const prefix = '/api/v1/namespaces/mirrorhub-system/services/http:mirrorhub-hub:http/proxy';
  it.each([
    ['/', '/'],
    ['/api/v1/snapshot?groupBy=env', '/api/v1/snapshot?groupBy=env'],
    // The API server rewrote the page's links to include its proxy prefix.
    [`${prefix}/assets/app.js`, '/assets/app.js'],
    [prefix, '/'],
    ['/../../secrets', undefined],
    ['/assets/%2e%2e/x', undefined],
    ['/a%2Fb', undefined],
    ['//evil.example/x', undefined],
    ['http://evil.example/x', undefined],
    ['/a\\b', undefined],
  ])('%s -> %s', (target, path) => {
    expect(localPath(target, prefix)).toBe(path);
  });
});
