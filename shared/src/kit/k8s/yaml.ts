// The YAML parser, for callers that must parse synchronously (a kubeconfig in a Secret). Loads
// `yaml` (small), not client-node.
export { parse as parseYaml } from 'yaml';
