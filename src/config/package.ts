/**
 * package.json, read once: the version `tessera --version` prints and the minimum Node.js
 * (src/config/node-version.ts). Found relative to this file, two levels up from src/config/
 * and from dist/config/ alike; the single executable's bundle has it inlined
 * (deploy/executable/build.ts).
 */
import { readFileSync } from 'node:fs';

export interface PackageJson {
  readonly name: string;
  readonly version: string;
  readonly engines?: { readonly node?: string };
}

export const PACKAGE: PackageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as PackageJson;
