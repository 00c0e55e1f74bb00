/**
 * The container image is reproducible (docs/deployment.md): built again without buildah's
 * layer cache, from the same commit and the same installed packages, it has the same digest,
 * so the digest a registry shows can be checked against a build of one's own.
 *
 * Two whole builds, about 15 s of CPU: `npm run test:image` runs this file, after `npm test`
 * in .ci/run, rather than `npm test` itself, which test/image.test.ts's checks of the image
 * keep within its two minutes. Needs what that file needs (helpers/image-tools.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildImage } from '../deploy/image/build.ts';
import { imageTestsSkip, requireImageTools } from './helpers/image-tools.ts';

describe('the container image, built twice', { skip: imageTestsSkip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-image-again-'));
  before(requireImageTools);
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('builds again without the cache to the same digest', async () => {
    const first = await buildImage({ layout: join(dir, 'first'), sbom: join(dir, 'first.cdx.json'), name: 'tessera-test', log: () => {} });
    const again = await buildImage({ layout: join(dir, 'again'), sbom: join(dir, 'again.cdx.json'), name: 'tessera-test', noCache: true, log: () => {} });
    assert.equal(again.digest, first.digest);
  });
});
