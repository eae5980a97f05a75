// Checks Kubernetes manifests offline, as the API server would on
// `kubectl apply --validate=strict`, as far as a schema can tell:
//   - each object against the Kubernetes API's published OpenAPI schema
//     (kubernetes-models: types, required fields, enums, formats);
//   - no unknown field anywhere (the field lists of @kubernetes/client-node's
//     models, generated from the same OpenAPI document);
//   - a JobSet (jobset.x-k8s.io/v1alpha2) against jobset-v1alpha2.schema.json
//     beside this file, each of its Job templates as a batch/v1 Job, and the
//     checks the JobSet webhook makes on names and references;
//   - a few rules the API server enforces beyond the schema (names, label
//     values, podFailurePolicy needing restartPolicy Never, selectors that
//     match their template).
//
// Usage: node validate.mjs MANIFEST.yaml...   (exit 0: all valid; 1: not)
// Install its packages first: tools/setup-deploy-check.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import Ajv from 'ajv';
import yaml from 'js-yaml';
import * as clientModels from '@kubernetes/client-node';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { Job } from 'kubernetes-models/batch/v1/Job';

const here = dirname(fileURLToPath(import.meta.url));

// apiVersion/kind -> the schema-checked model and the client model's name.
const KINDS = {
  'v1/ConfigMap': { model: ConfigMap, type: 'V1ConfigMap' },
  'v1/PersistentVolumeClaim': { model: PersistentVolumeClaim, type: 'V1PersistentVolumeClaim' },
  'v1/Service': { model: Service, type: 'V1Service' },
  'apps/v1/Deployment': { model: Deployment, type: 'V1Deployment' },
  'apps/v1/StatefulSet': { model: StatefulSet, type: 'V1StatefulSet' },
  'batch/v1/Job': { model: Job, type: 'V1Job' },
};

const ajv = new Ajv({ allErrors: true });
const validateJobSet = ajv.compile(
  JSON.parse(readFileSync(join(here, 'jobset-v1alpha2.schema.json'), 'utf8')));

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

// Walks `value` along the client model `type` and reports every field the
// model does not have and every value of the wrong JSON type.
function checkFields(value, type, path, errors) {
  if (value === null || value === undefined) return;
  if (type === 'any' || type === 'object') return;
  if (type === 'string' || type === 'Date') {
    if (typeof value !== 'string') errors.push(`${path}: must be a string, not ${JSON.stringify(value)}`);
    return;
  }
  if (type === 'number') {
    if (typeof value !== 'number') errors.push(`${path}: must be a number, not ${JSON.stringify(value)}`);
    return;
  }
  if (type === 'boolean') {
    if (typeof value !== 'boolean') errors.push(`${path}: must be true or false, not ${JSON.stringify(value)}`);
    return;
  }
  if (type === 'IntOrString') {
    if (typeof value !== 'string' && !Number.isInteger(value)) {
      errors.push(`${path}: must be an integer or a string`);
    }
    return;
  }
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) { errors.push(`${path}: must be a list`); return; }
    value.forEach((item, i) => checkFields(item, array[1], `${path}[${i}]`, errors));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value !== 'object' || Array.isArray(value)) { errors.push(`${path}: must be a map`); return; }
    for (const [k, v] of Object.entries(value)) checkFields(v, map[1], `${path}.${k}`, errors);
    return;
  }
  const model = clientModels[type];
  if (!model || typeof model.getAttributeTypeMap !== 'function') {
    errors.push(`${path}: no model ${type} to check against`);
    return;
  }
  if (typeof value !== 'object' || Array.isArray(value)) { errors.push(`${path}: must be a map`); return; }
  const fields = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [k, v] of Object.entries(value)) {
    if (!fields.has(k)) {
      errors.push(`${path}: unknown field "${k}" (${type} has ${[...fields.keys()].join(', ')})`);
    } else {
      checkFields(v, fields.get(k), `${path}.${k}`, errors);
    }
  }
}

function checkSchema(model, object, path, errors) {
  try {
    new model(object).validate();
  } catch (e) {
    if (!e.errors) throw e;
    for (const err of e.errors) {
      const extra = err.params && err.params.allowedValues ? ` (${err.params.allowedValues.join(', ')})` : '';
      errors.push(`${path}${err.instancePath.replaceAll('/', '.')}: ${err.message}${extra}`);
    }
  }
}

function checkMetadata(meta, path, errors, { nameRequired = true } = {}) {
  if (!meta || typeof meta !== 'object') { errors.push(`${path}: metadata missing`); return; }
  if (nameRequired || meta.name !== undefined) {
    if (typeof meta.name !== 'string' || !DNS1123_SUBDOMAIN.test(meta.name) || meta.name.length > 253) {
      errors.push(`${path}.name: ${JSON.stringify(meta.name)} is not a DNS-1123 subdomain`);
    }
  }
  for (const [k, v] of Object.entries(meta.labels || {})) {
    if (!QUALIFIED_NAME.test(k)) errors.push(`${path}.labels: bad key ${JSON.stringify(k)}`);
    if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v)) {
      errors.push(`${path}.labels.${k}: bad label value ${JSON.stringify(v)} (a string of at most 63 characters)`);
    }
  }
  for (const [k, v] of Object.entries(meta.annotations || {})) {
    if (!QUALIFIED_NAME.test(k)) errors.push(`${path}.annotations: bad key ${JSON.stringify(k)}`);
    if (typeof v !== 'string') errors.push(`${path}.annotations.${k}: must be a string (quote it)`);
  }
}

// Rules of a pod template that the API server checks beyond the schema.
function checkPodTemplate(template, path, errors, claimTemplates = []) {
  checkMetadata(template.metadata, `${path}.metadata`, errors, { nameRequired: false });
  const spec = template.spec || {};
  const containers = [...(spec.initContainers || []), ...(spec.containers || [])];
  const names = new Set();
  for (const [i, c] of containers.entries()) {
    const cpath = `${path}.spec.containers[${i}]`;
    if (!DNS1123_LABEL.test(c.name || '')) errors.push(`${cpath}.name: ${JSON.stringify(c.name)} is not a DNS-1123 label`);
    if (names.has(c.name)) errors.push(`${cpath}.name: ${c.name} appears twice`);
    names.add(c.name);
    const portNames = new Set();
    for (const p of c.ports || []) {
      if (p.name !== undefined) {
        if (p.name.length > 15 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(p.name)) {
          errors.push(`${cpath}.ports: bad port name ${JSON.stringify(p.name)} (at most 15 characters)`);
        }
        if (portNames.has(p.name)) errors.push(`${cpath}.ports: port name ${p.name} appears twice`);
        portNames.add(p.name);
      }
    }
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      const pr = c[probe];
      if (!pr) continue;
      const handlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'].filter((h) => pr[h] !== undefined);
      if (handlers.length !== 1) errors.push(`${cpath}.${probe}: needs exactly one handler, has ${handlers.join(', ') || 'none'}`);
      if (pr.grpc && !Number.isInteger(pr.grpc.port)) errors.push(`${cpath}.${probe}.grpc.port: must be a number`);
      if (probe !== 'readinessProbe' && pr.successThreshold !== undefined && pr.successThreshold !== 1) {
        errors.push(`${cpath}.${probe}.successThreshold: must be 1`);
      }
    }
    const volumes = new Set([...(spec.volumes || []).map((v) => v.name), ...claimTemplates]);
    for (const m of c.volumeMounts || []) {
      if (!volumes.has(m.name)) errors.push(`${cpath}.volumeMounts: ${m.name} names no volume of the pod`);
    }
    for (const e of c.env || []) {
      if (!/^[-._a-zA-Z][-._a-zA-Z0-9]*$/.test(e.name || '')) errors.push(`${cpath}.env: bad name ${JSON.stringify(e.name)}`);
      if (e.value !== undefined && e.valueFrom !== undefined) errors.push(`${cpath}.env.${e.name}: value and valueFrom both set`);
    }
  }
  return { containerNames: names, restartPolicy: spec.restartPolicy };
}

function checkJobSpec(spec, path, errors, { inJobSet = false } = {}) {
  if (!spec) { errors.push(`${path}: spec missing`); return; }
  const tpl = checkPodTemplate(spec.template || {}, `${path}.template`, errors);
  const restart = tpl.restartPolicy;
  if (restart !== 'Never' && restart !== 'OnFailure' && !(inJobSet && restart === undefined)) {
    errors.push(`${path}.template.spec.restartPolicy: a Job's pods need Never or OnFailure`);
  }
  if (spec.podFailurePolicy) {
    if (restart !== 'Never') errors.push(`${path}.podFailurePolicy: needs template.spec.restartPolicy: Never`);
    for (const [i, rule] of (spec.podFailurePolicy.rules || []).entries()) {
      const rpath = `${path}.podFailurePolicy.rules[${i}]`;
      if (!!rule.onExitCodes === !!rule.onPodConditions) errors.push(`${rpath}: needs one of onExitCodes and onPodConditions`);
      if (rule.action === 'FailIndex' && !spec.backoffLimitPerIndex) errors.push(`${rpath}: FailIndex needs backoffLimitPerIndex`);
      const codes = rule.onExitCodes;
      if (codes) {
        if (codes.containerName !== undefined && !tpl.containerNames.has(codes.containerName)) {
          errors.push(`${rpath}.onExitCodes.containerName: ${codes.containerName} is no container of the pod`);
        }
        const values = codes.values || [];
        if (values.length === 0 || values.length > 255) errors.push(`${rpath}.onExitCodes.values: 1 to 255 values`);
        if (new Set(values).size !== values.length) errors.push(`${rpath}.onExitCodes.values: duplicates`);
        if (codes.operator === 'In' && values.includes(0)) errors.push(`${rpath}.onExitCodes.values: 0 with operator In`);
        for (let k = 1; k < values.length; k++) {
          if (values[k] <= values[k - 1]) errors.push(`${rpath}.onExitCodes.values: must be in ascending order`);
        }
      }
    }
  }
  if (spec.completionMode === 'Indexed' && spec.completions === undefined) {
    errors.push(`${path}.completions: an Indexed Job needs completions`);
  }
}

function selectorMatches(selector, labels) {
  if (!selector) return false;
  for (const [k, v] of Object.entries(selector.matchLabels || {})) {
    if ((labels || {})[k] !== v) return false;
  }
  return !(selector.matchExpressions || []).length;
}

function checkObject(obj, where, errors) {
  if (!obj || typeof obj !== 'object') { errors.push(`${where}: not a Kubernetes object`); return; }
  const key = `${obj.apiVersion}/${obj.kind}`;
  const path = `${where} ${obj.kind || '?'}/${(obj.metadata || {}).name || '?'}`;
  if (key === 'jobset.x-k8s.io/v1alpha2/JobSet') {
    if (!validateJobSet(obj)) {
      for (const err of validateJobSet.errors) {
        let extra = '';
        if (err.params && err.params.additionalProperty) extra = ` "${err.params.additionalProperty}"`;
        if (err.params && err.params.allowedValues) extra = ` (${err.params.allowedValues.join(', ')})`;
        errors.push(`${path}${err.instancePath.replaceAll('/', '.')}: ${err.message}${extra}`);
      }
    }
    checkFields(obj.metadata, 'V1ObjectMeta', `${path}.metadata`, errors);
    checkMetadata(obj.metadata, `${path}.metadata`, errors);
    const spec = obj.spec || {};
    const names = new Set();
    for (const [i, rj] of (spec.replicatedJobs || []).entries()) {
      const rpath = `${path}.spec.replicatedJobs[${i}]`;
      if (names.has(rj.name)) errors.push(`${rpath}.name: ${rj.name} appears twice`);
      names.add(rj.name);
      if (i === 0 && rj.dependsOn) errors.push(`${rpath}.dependsOn: not allowed on the first replicated job`);
      for (const d of rj.dependsOn || []) {
        if (!names.has(d.name)) errors.push(`${rpath}.dependsOn: ${d.name} is not an earlier replicated job`);
      }
      const job = { apiVersion: 'batch/v1', kind: 'Job', metadata: (rj.template || {}).metadata || {}, spec: (rj.template || {}).spec };
      checkSchema(Job, job, `${rpath}.template`, errors);
      checkFields(rj.template, 'V1JobTemplateSpec', `${rpath}.template`, errors);
      checkJobSpec(rj.template && rj.template.spec, `${rpath}.template.spec`, errors, { inJobSet: true });
      const tspec = (rj.template && rj.template.spec) || {};
      // Pod names (and DNS hostnames) are <jobset>-<rjob>-<jobIndex>-<podIndex>
      // plus a 5-character suffix: a DNS-1035 label of at most 63 characters.
      const longest = `${obj.metadata.name}-${rj.name}-${(rj.replicas ?? 1) - 1}-${(tspec.completions ?? 1) - 1}-abcde`;
      if (longest.length > 63 || !DNS1035_LABEL.test(longest)) errors.push(`${rpath}: pod names like ${longest} are too long`);
      if (spec.network && spec.network.enableDNSHostnames && tspec.completionMode && tspec.completionMode !== 'Indexed') {
        errors.push(`${rpath}.template.spec.completionMode: DNS hostnames need Indexed Jobs`);
      }
    }
    const refs = [
      ...((spec.successPolicy || {}).targetReplicatedJobs || []).map((n) => ['successPolicy', n]),
      ...((spec.failurePolicy || {}).rules || []).flatMap((r) => (r.targetReplicatedJobs || []).map((n) => [`failurePolicy rule ${r.name}`, n])),
    ];
    for (const [what, n] of refs) {
      if (!names.has(n)) errors.push(`${path}.spec: ${what} names replicated job ${n}, which does not exist`);
    }
    const ruleNames = ((spec.failurePolicy || {}).rules || []).map((r) => r.name);
    if (new Set(ruleNames).size !== ruleNames.length) errors.push(`${path}.spec.failurePolicy.rules: names not unique`);
    if ((spec.startupPolicy || {}).startupPolicyOrder === 'InOrder' && (spec.replicatedJobs || []).some((r) => r.dependsOn)) {
      errors.push(`${path}.spec: startupPolicy InOrder and dependsOn exclude each other`);
    }
    return;
  }
  const kind = KINDS[key];
  if (!kind) { errors.push(`${path}: no schema here for ${key}`); return; }
  checkSchema(kind.model, obj, path, errors);
  checkFields(obj, kind.type, path, errors);
  checkMetadata(obj.metadata, `${path}.metadata`, errors);
  const spec = obj.spec || {};
  if (obj.kind === 'Job') checkJobSpec(spec, `${path}.spec`, errors);
  if (obj.kind === 'StatefulSet' || obj.kind === 'Deployment') {
    const claims = (spec.volumeClaimTemplates || []).map((c) => (c.metadata || {}).name);
    const tpl = checkPodTemplate(spec.template || {}, `${path}.spec.template`, errors, claims);
    if (tpl.restartPolicy !== undefined && tpl.restartPolicy !== 'Always') {
      errors.push(`${path}.spec.template.spec.restartPolicy: must be Always`);
    }
    if (!selectorMatches(spec.selector, ((spec.template || {}).metadata || {}).labels)) {
      errors.push(`${path}.spec.selector: does not match the template's labels`);
    }
  }
  if (obj.kind === 'Service' && spec.selector === undefined) {
    errors.push(`${path}.spec.selector: missing`);
  }
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node validate.mjs MANIFEST.yaml...');
  process.exit(2);
}
let failed = 0;
let objects = 0;
for (const file of files) {
  let docs;
  try {
    docs = yaml.loadAll(readFileSync(file, 'utf8'));
  } catch (e) {
    console.error(`${file}: ${e.message}`);
    failed++;
    continue;
  }
  docs.forEach((doc, i) => {
    if (doc === null || doc === undefined) return;
    objects++;
    const errors = [];
    checkObject(doc, `${file}#${i}`, errors);
    for (const e of errors) console.error(e);
    if (errors.length) failed++;
    else console.log(`ok ${file}#${i} ${doc.apiVersion} ${doc.kind}/${doc.metadata.name}`);
  });
}
console.log(`${objects} objects, ${failed} invalid`);
process.exit(failed ? 1 : 0);
