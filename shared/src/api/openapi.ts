// The subset of the OpenAPI v3 / apiextensions.k8s.io/v1 JSONSchemaProps that mirrorhub's
// schema uses, plus one generator-only field (`tsType`) that names the TypeScript type emitted
// for a node. `toCrdSchema` strips `tsType` so the CRD carries only what the API server knows.

export interface ValidationRule {
  /** CEL expression; `self` is the value of the node the rule sits on. */
  rule: string;
  message?: string;
  messageExpression?: string;
  /** Field the error is reported on, relative to the node (e.g. ".namespaces"). */
  fieldPath?: string;
  reason?:
    'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export interface Schema {
  type: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  /** Generator only: the exported TypeScript name for this node (objects and enums). */
  tsType?: string;
  /**
   * Generator only: the doc comment of the exported type when it differs from this field's
   * description (a shared type such as LabelSelector is described per field, once as a type).
   */
  tsDescription?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: Schema;
  items?: Schema;
  enum?: (string | number)[];
  default?: unknown;
  format?: 'date-time' | 'int32' | 'int64';
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  'x-kubernetes-validations'?: ValidationRule[];
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

/** Keys of JSONSchemaProps the API server accepts, in the order the CRD YAML lists them. */
export const CRD_SCHEMA_KEYS = [
  'description',
  'type',
  'format',
  'enum',
  'default',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'required',
  'properties',
  'additionalProperties',
  'items',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-validations',
] as const;

type CrdSchema = { [key: string]: unknown };

/** The schema as the API server wants it: generator-only fields dropped, stable key order. */
export function toCrdSchema(schema: Schema): CrdSchema {
  const out: CrdSchema = {};
  for (const key of CRD_SCHEMA_KEYS) {
    const value = schema[key];
    if (value === undefined) continue;
    if (key === 'properties') {
      const props: CrdSchema = {};
      for (const [name, child] of Object.entries(value as Record<string, Schema>)) {
        props[name] = toCrdSchema(child);
      }
      out[key] = props;
    } else if (key === 'items' || key === 'additionalProperties') {
      out[key] = toCrdSchema(value as Schema);
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** Walks every node of a schema, depth first, with its JSON path. */
export function walkSchema(
  schema: Schema,
  visit: (node: Schema, path: string) => void,
  path = '',
): void {
  visit(schema, path);
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    walkSchema(child, visit, `${path}.${name}`);
  }
  if (schema.items) walkSchema(schema.items, visit, `${path}[]`);
  if (schema.additionalProperties) walkSchema(schema.additionalProperties, visit, `${path}{}`);
}
