// The incumbents' CRDs, minimal but as their charts/config declare them: ClusterSecret's fields
// at the top level (charts/cluster-secret/crds/clustersecret-crd.yaml); KTS serving v1alpha1 and
// v1alpha2, storing v1alpha2 (config/crd/bases/mirrors.kts.studio_secretmirrors.yaml). One copy,
// for every test that seeds a cluster as those tools leave it (migrate, takeover).
import { loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node';

export const CLUSTER_SECRET_CRD = loadYaml<V1CustomResourceDefinition>(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clustersecrets.clustersecret.io
spec:
  group: clustersecret.io
  names: {kind: ClusterSecret, plural: clustersecrets, singular: clustersecret, shortNames: [csec]}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          avoidNamespaces: {type: array, items: {type: string}}
          matchNamespace: {type: array, items: {type: string}}
          data: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
          type: {type: string}
`);

const KTS_VAULT = `
                  type: object
                  properties:
                    addr: {type: string}
                    path: {type: string}
                    auth:
                      type: object
                      properties:
                        approle:
                          type: object
                          properties:
                            appRolePath: {type: string}
                            roleIDKey: {type: string}
                            secretIDKey: {type: string}
                            secretRef: {type: object, properties: {name: {type: string}, namespace: {type: string}}}
                        token:
                          type: object
                          properties:
                            tokenKey: {type: string}
                            secretRef: {type: object, properties: {name: {type: string}, namespace: {type: string}}}`;

const KTS_CRD_YAML = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: secretmirrors.mirrors.kts.studio
spec:
  group: mirrors.kts.studio
  names: {kind: SecretMirror, listKind: SecretMirrorList, plural: secretmirrors, singular: secretmirror}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: false
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              source: {type: object, properties: {name: {type: string}}}
              destination: {type: object, properties: {namespace: {type: string}, namespaceRegex: {type: string}}}
              pollPeriodSeconds: {type: integer, format: int64}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v1alpha2
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              source:
                type: object
                properties:
                  type: {type: string}
                  name: {type: string}
                  vault:${KTS_VAULT.replace(/^ {18}/gm, '                    ')}
              destination:
                type: object
                properties:
                  type: {type: string}
                  namespaces: {type: array, items: {type: string}}
                  vault:${KTS_VAULT.replace(/^ {18}/gm, '                    ')}
              deletePolicy: {type: string}
              pollPeriodSeconds: {type: integer, format: int64}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`;
export const KTS_CRD = loadYaml<V1CustomResourceDefinition>(KTS_CRD_YAML);
/** The same CRD as an older KTS installed it: v1alpha1 only. */
export const KTS_V1ALPHA1_CRD = loadYaml<V1CustomResourceDefinition>(
  KTS_CRD_YAML.slice(0, KTS_CRD_YAML.indexOf('  - name: v1alpha2')).replace(
    'storage: false',
    'storage: true',
  ),
);
