/**
 * The console's trusted issuers (docs/agents.md): the list, the form to add one from their
 * field table, one issuer's page, and remove after a confirmation, calling the operations the
 * command and the admin API call (flows/manage/trusted-issuers.ts) with the operator's
 * authority: the clients' area, and a jwks_uri held to the public network as through the admin API.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { RawParams } from '../../core/protocol.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import { formKeys, formValues, inputOf, postedValues, sameValue, type FormValues } from '../../flows/manage/fields/field.ts';
import { TRUSTED_ISSUER_FIELDS } from '../../flows/manage/fields/trusted-issuers.ts';
import { addTrustedIssuer, getTrustedIssuer, listTrustedIssuers, removeTrustedIssuer, type TrustedIssuerInput } from '../../flows/manage/trusted-issuers.ts';
import type { TrustedIssuerRecord } from '../../store/types.ts';
import { confirmPage } from '../../ui/console.ts';
import { trustedIssuerFormPage, trustedIssuerPage, trustedIssuersPage } from '../../ui/console-trust.ts';
import { html, type SafeHtml } from '../../ui/html.ts';
import type { Ui } from '../../ui/pages.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { rawForm } from '../form.ts';
import { consoleKit, reasonOf, single } from './kit.ts';

/** Where the trusted issuers are: in the apps' section (linked from its list), whose assertions they sign. */
export const TRUST_PATH = '/console/trusted-issuers';
export const trustedIssuerPath = (issuer: string) => `${TRUST_PATH}/${encodeURIComponent(issuer)}`;

const keysOf = (ui: Ui, record: TrustedIssuerRecord): string =>
  record.jwksUri ?? ui.t.text('console.trust.keyCount', { count: ((record.jwks as { keys?: unknown[] } | null)?.keys ?? []).length });

export const trustPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, change, confirm, frame, manage, may } = consoleKit(app, options);
  const issuerOf = (request: FastifyRequest) => (request.params as { issuer: string }).issuer;

  app.get(TRUST_PATH, page('clients'), async (request, reply) => {
    const f = frame(request, reply, 'apps');
    const done = single(request.query as RawParams, 'done', 20);
    return pages.send(
      reply,
      200,
      trustedIssuersPage(f, {
        issuers: (await listTrustedIssuers(deps)).map((record) => ({
          issuer: record.issuer,
          keys: keysOf(f.ui, record),
          href: trustedIssuerPath(record.issuer),
        })),
        addHref: may(request, 'clients', true) ? `${TRUST_PATH}/new` : null,
        notice: done === 'removed' ? f.ui.t.text('console.trust.removed') : done === 'added' ? f.ui.t.text('console.trust.added') : undefined,
      }),
    );
  });

  const newForm = (request: FastifyRequest, reply: FastifyReply, status: number, values: FormValues, error?: SafeHtml) =>
    pages.send(reply, status, trustedIssuerFormPage(frame(request, reply, 'apps'), { action: TRUST_PATH, values, cancel: TRUST_PATH, error }));

  app.get(`${TRUST_PATH}/new`, confirm('clients'), async (request, reply) => newForm(request, reply, 200, formValues(TRUSTED_ISSUER_FIELDS, {})));

  app.post(TRUST_PATH, change('clients'), async (request, reply) => {
    const values = postedValues(TRUSTED_ISSUER_FIELDS, rawForm(request));
    // As `trust add`: a field left empty is not given.
    const given = formKeys(TRUSTED_ISSUER_FIELDS).filter((key) => !sameValue(values[key], '') && !sameValue(values[key], []));
    try {
      await addTrustedIssuer(manage(request), inputOf(TRUSTED_ISSUER_FIELDS, values, given) as TrustedIssuerInput);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return newForm(request, reply, MANAGE_STATUS[error.kind], values, reasonOf(frame(request, reply, 'apps').ui, error));
    }
    return reply.redirect(`${TRUST_PATH}?done=added`, 303);
  });

  app.get(`${TRUST_PATH}/:issuer`, page('clients'), async (request, reply) => {
    const record = await getTrustedIssuer(deps, issuerOf(request));
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    return pages.send(
      reply,
      200,
      trustedIssuerPage(f, {
        issuer: record.issuer,
        facts: [
          { label: t.text('console.trust.keys'), value: keysOf(f.ui, record) },
          { label: t.text('console.trust.createdAt'), value: t.time(record.createdAt) },
        ],
        removeHref: may(request, 'clients', true) ? `${trustedIssuerPath(record.issuer)}/remove` : null,
      }),
    );
  });

  app.get(`${TRUST_PATH}/:issuer/remove`, confirm('clients'), async (request, reply) => {
    const record = await getTrustedIssuer(deps, issuerOf(request));
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    const path = trustedIssuerPath(record.issuer);
    return pages.send(
      reply,
      200,
      confirmPage(
        f,
        t.text('console.trust.remove'),
        t.text('console.trust.remove.confirm', { issuer: record.issuer }),
        `${path}/remove`,
        path,
        html`<input type="hidden" name="return_to" value="${path}/remove">`,
      ),
    );
  });

  app.post(`${TRUST_PATH}/:issuer/remove`, change('clients'), async (request, reply) => {
    await removeTrustedIssuer(manage(request), issuerOf(request));
    return reply.redirect(`${TRUST_PATH}?done=removed`, 303);
  });
};
