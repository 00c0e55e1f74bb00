/**
 * What the image tests need of the machine: buildah, umoci and skopeo (.ci/run installs them),
 * and root, for a mount namespace and chroot. Without them those files are skipped saying so,
 * except in CI (CI=1), where that fails.
 */
import { inCi, which } from './machine.ts';

const TOOLS = ['buildah', 'umoci', 'skopeo', 'unshare', 'chroot', 'mount'];

const missing = TOOLS.filter((name) => which(name) === undefined);

/** Why the image cannot be built and run here, or null where it can. */
export const imageToolsMissing: string | null =
  missing.length > 0
    ? `${missing.join(', ')} not installed (apt-get install buildah umoci skopeo; .ci/run does)`
    : process.getuid?.() === 0
      ? null
      : 'it needs root, for a mount namespace and chroot';

/** The image tests' `skip` option: skipped saying why, or in CI a failure in `before` (see `requireImageTools`). */
export const imageTestsSkip: string | false = imageToolsMissing !== null && !inCi() ? `image tests skipped: ${imageToolsMissing}` : false;

/** Throws in CI where the tools are missing: there the image tests must run. */
export function requireImageTools(): void {
  if (imageToolsMissing !== null) throw new Error(`the image tests must run in CI, but ${imageToolsMissing}`);
}
