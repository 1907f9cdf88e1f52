// Helpers for tests that talk to real API servers with @kubernetes/client-node's generated clients
// (production talks through the lean REST client, k8s/rest.ts).
//
// Patch content types — the known gotcha: the generated 1.x clients pick the *first* media type
// a PATCH operation lists, which is `application/json-patch+json`, whatever the body is. A merge
// patch body sent that way fails with "cannot unmarshal object into Go value of type
// jsonpatch.Patch". The documented fix (client-node's patch example, `PatchStrategy` in
// patch.ts) is to pass per-call configuration that overrides the header via middleware:
// `setHeaderOptions('Content-Type', PatchStrategy.MergePatch)`. The middleware runs after the
// request factory set the default header, so it wins. The body is still serialised as JSON,
// which is also valid for server-side apply (YAML is a superset of JSON).
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

/** Per-call options that make a generated PATCH send the given Content-Type. */
export function patchOptions(strategy: PatchStrategy): ReturnType<typeof setHeaderOptions> {
  return setHeaderOptions('Content-Type', strategy);
}
export const mergePatchOptions = (): ReturnType<typeof setHeaderOptions> =>
  patchOptions(PatchStrategy.MergePatch);
export const applyPatchOptions = (): ReturnType<typeof setHeaderOptions> =>
  patchOptions(PatchStrategy.ServerSideApply);
