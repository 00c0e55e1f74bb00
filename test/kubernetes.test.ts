/**
 * deploy/kubernetes/ as `kubectl kustomize` renders it (kubectl from Debian's kubernetes-client
 * or any other; .ci/run installs one where there is none): two replicas of this version's image
 * on PostgreSQL, the database URL and the key encryption key from the Secret, liveness on
 * /healthz and readiness on /readyz, a non-root user that is the image's, a read-only root,
 * resource requests, time to drain before SIGKILL, a Service and a PodDisruptionBudget that
 * select those pods, and a NetworkPolicy that lets only the ingress controller in. No cluster
 * is needed, nor reached. Without kubectl the file is skipped saying so, except in CI (CI=1),
 * where that fails.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { IMAGE_UID } from '../deploy/image/build.ts';
import { setting, SETTINGS, type IntegerSetting } from '../src/config/settings.ts';
import { runTessera } from './helpers/cli.ts';
import { inCi, which } from './helpers/machine.ts';
import { shellBlock, shellWords } from './helpers/shell-blocks.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const kubectl = which('kubectl') !== undefined;
const ci = inCi();

interface Probe {
  httpGet: { path: string; port: string | number };
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  ports: { name: string; containerPort: number }[];
  env: EnvVar[];
  livenessProbe: Probe;
  readinessProbe: Probe;
  resources: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext: { allowPrivilegeEscalation?: boolean; readOnlyRootFilesystem?: boolean; capabilities?: { drop?: string[] } };
}
interface LabelSelector {
  matchLabels?: Record<string, string>;
}
interface NetworkPolicyPeer {
  namespaceSelector?: LabelSelector;
  podSelector?: LabelSelector;
  ipBlock?: { cidr: string };
}
interface Resource {
  kind: string;
  metadata: { name: string };
  spec: {
    podSelector?: LabelSelector;
    policyTypes?: string[];
    ingress?: { from?: NetworkPolicyPeer[]; ports?: { port: string | number; protocol?: string }[] }[];
    replicas?: number;
    selector?: { matchLabels?: Record<string, string> } & Record<string, string>;
    minAvailable?: number;
    ports?: { port: number; targetPort: string | number }[];
    template?: {
      metadata: { labels: Record<string, string> };
      spec: {
        terminationGracePeriodSeconds?: number;
        enableServiceLinks?: boolean;
        securityContext: { runAsNonRoot?: boolean; runAsUser?: number };
        containers: Container[];
      };
    };
  };
}

describe('deploy/kubernetes, rendered by kubectl kustomize', {
  skip: kubectl || ci ? false : 'kubectl is not installed (apt-get install kubernetes-client; .ci/run does)',
}, () => {
  let resources: Resource[];
  const find = (kind: string) => {
    const found = resources.find((resource) => resource.kind === kind);
    assert.ok(found, `a ${kind}`);
    return found;
  };

  before(async () => {
    if (!kubectl) throw new Error('kubectl is not installed, and the manifests must be rendered in CI: .ci/run installs kubernetes-client');
    const { stdout } = await promisify(execFile)('kubectl', ['kustomize', join(ROOT, 'deploy', 'kubernetes')]);
    resources = parseAllDocuments(stdout).map((document) => document.toJS() as Resource);
  });

  it("runs two replicas of this version's image, serving by default", () => {
    const deployment = find('Deployment');
    assert.equal(deployment.spec.replicas, 2);
    const [container] = deployment.spec.template!.spec.containers;
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    assert.equal(container!.image, `tessera:${version}`);
    assert.deepEqual(container!.args, ['serve']);
  });

  it('takes the database URL and the key encryption key from the Secret, and names only real settings', () => {
    const env = find('Deployment').spec.template!.spec.containers[0]!.env;
    for (const name of ['TESSERA_DATABASE', 'TESSERA_KEY_ENCRYPTION_KEY']) {
      const variable = env.find((entry) => entry.name === name);
      assert.equal(variable?.value, undefined, `${name} is not written in the manifest`);
      assert.equal(variable?.valueFrom?.secretKeyRef?.name, 'tessera', `${name} comes from the Secret`);
    }
    const known = new Set<string>(SETTINGS.map((row) => row.name));
    for (const { name } of env) assert.ok(known.has(name), `${name} is a setting`);
  });

  it('checks liveness on /healthz and readiness on /readyz, at the port the image listens on', () => {
    const container = find('Deployment').spec.template!.spec.containers[0]!;
    assert.deepEqual(container.ports, [{ name: 'http', containerPort: (setting('PORT') as IntegerSetting).default }]);
    assert.deepEqual(container.livenessProbe.httpGet, { path: '/healthz', port: 'http' });
    assert.deepEqual(container.readinessProbe.httpGet, { path: '/readyz', port: 'http' });
  });

  it("runs as the image's non-root user on a read-only root, with nothing to escalate to", () => {
    const pod = find('Deployment').spec.template!.spec;
    assert.equal(pod.securityContext.runAsNonRoot, true);
    // The Services' TESSERA_* link variables would sit in the settings' prefix (one, TESSERA_METRICS_PORT, is a setting).
    assert.equal(pod.enableServiceLinks, false);
    assert.equal(pod.securityContext.runAsUser, IMAGE_UID);
    const { securityContext } = pod.containers[0]!;
    assert.equal(securityContext.readOnlyRootFilesystem, true);
    assert.equal(securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(securityContext.capabilities?.drop, ['ALL']);
  });

  it('requests CPU and memory, and gives a stopping instance time to drain before SIGKILL', () => {
    const pod = find('Deployment').spec.template!.spec;
    const { requests, limits } = pod.containers[0]!.resources;
    assert.ok(requests?.['cpu'] && requests['memory'], 'requests');
    const mebibytes = (quantity: string) => Number(/^(\d+)Mi$/.exec(quantity)?.[1]);
    // docs/benchmarks.md: 249 MiB at the peak of a sign-in flood.
    assert.ok(mebibytes(limits!['memory']!) > 249 && mebibytes(requests['memory']!) < mebibytes(limits!['memory']!));
    const seconds = (name: 'TESSERA_SHUTDOWN_DELAY' | 'TESSERA_SHUTDOWN_TIMEOUT') => (setting(name) as IntegerSetting).default;
    assert.ok(pod.terminationGracePeriodSeconds! > seconds('TESSERA_SHUTDOWN_DELAY') + seconds('TESSERA_SHUTDOWN_TIMEOUT'));
  });

  it('has a Service and a PodDisruptionBudget that select the pods, and a budget that leaves one serving', () => {
    const labels = find('Deployment').spec.template!.metadata.labels;
    const service = find('Service');
    for (const [name, value] of Object.entries(service.spec.selector!)) assert.equal(labels[name], value);
    assert.deepEqual(
      service.spec.ports!.map((port) => port.targetPort),
      ['http'],
    );
    const budget = find('PodDisruptionBudget');
    for (const [name, value] of Object.entries(budget.spec.selector!.matchLabels!)) assert.equal(labels[name], value);
    assert.equal(budget.spec.minAvailable, 1);
  });

  it('lets only the ingress controller reach the pods, at their http port: TESSERA_TRUST_PROXY believes the whole pod network', () => {
    const labels = find('Deployment').spec.template!.metadata.labels;
    const policy = find('NetworkPolicy');
    const selected = Object.entries(policy.spec.podSelector?.matchLabels ?? {});
    assert.ok(selected.length > 0, "it selects Tessera's pods, not every pod of the namespace");
    for (const [name, value] of selected) assert.equal(labels[name], value);
    assert.deepEqual(policy.spec.policyTypes, ['Ingress']);
    const rules = policy.spec.ingress ?? [];
    assert.ok(rules.length > 0, 'the ingress controller is let in');
    const deployment = readFileSync(join(ROOT, 'docs', 'deployment.md'), 'utf8');
    const kubernetes = deployment.slice(deployment.indexOf('## Kubernetes'), deployment.indexOf('## Signing keys')).replace(/\s+/g, ' ');
    for (const rule of rules) {
      // A rule without `from`, or with an empty peer, lets every address in.
      assert.ok(rule.from && rule.from.length > 0, 'each rule names who may connect');
      for (const peer of rule.from) {
        assert.equal(peer.ipBlock, undefined, 'by label, not by address: the pod network is every pod');
        const namespace = Object.entries(peer.namespaceSelector?.matchLabels ?? {});
        const pods = Object.entries(peer.podSelector?.matchLabels ?? {});
        assert.ok(namespace.length > 0 && pods.length > 0, "the controller's namespace and its pods in it, each by label");
        for (const [name, value] of [...namespace, ...pods])
          assert.ok(kubernetes.includes(`\`${name}: ${value}\``), `docs/deployment.md names ${name}: ${value} to adapt`);
      }
      assert.deepEqual(rule.ports, [{ port: 'http', protocol: 'TCP' }]);
    }
  });

  it("docs/deployment.md: the page's Secret has the keys the pods read, apply -k applies these files, and its exec line registers a client", async () => {
    const [create, apply, exec] = shellBlock('docs/deployment.md', 'kubectl create secret').split('\n');
    const words = shellWords(create!);
    assert.deepEqual(words.slice(0, 5), ['kubectl', 'create', 'secret', 'generic', 'tessera']);
    const given = words
      .map((word) => /^--from-literal=([^=]+)=/.exec(word)?.[1])
      .filter((key) => key !== undefined)
      .sort();
    const env = find('Deployment').spec.template!.spec.containers[0]!.env;
    const read = env.map((variable) => variable.valueFrom?.secretKeyRef).filter((ref) => ref !== undefined);
    assert.deepEqual(given, read.map((ref) => ref.key).sort());
    assert.ok(read.every((ref) => ref.name === 'tessera'));
    assert.equal(apply, 'kubectl apply -k deploy/kubernetes');
    const [, deployment, args] = /^kubectl exec deploy\/(\S+) -- tessera (.*)$/.exec(exec!)!;
    assert.equal(deployment, find('Deployment').metadata.name);
    // What `kubectl exec` runs in the pod, here on a database of the test's own.
    const dir = mkdtempSync(join(tmpdir(), 'tessera-kubernetes-docs-'));
    try {
      const added = await runTessera(shellWords(args!), { TESSERA_DATABASE: join(dir, 'tessera.db'), TESSERA_DATABASE_CREATE: 'true' });
      assert.equal(added.code, 0, added.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
