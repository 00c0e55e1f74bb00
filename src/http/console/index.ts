/**
 * The operator console: pages for the people who look after the server, calling
 * the operations the `tessera` command and the admin API call (src/flows/manage), with the
 * admin API's permission check over the scopes a person's role stands for (core/scopes.ts
 * ROLE_SCOPES). Who may enter is the session flow's signed-in person with a role, whose
 * sign-in had a second factor, and for a change a recent one (flows/second-factor/policy.ts
 * `operatorRefusal`); every change is an event naming the operator. One encapsulated plugin
 * per noun beside this file; here, the refusals every page shares.
 */
import type { FastifyError, FastifyPluginAsync } from 'fastify';
import { CONSOLE_PATHS } from '../../core/endpoints.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import { forbiddenPage } from '../../ui/console.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { activityPages } from './activity.ts';
import { apiPages } from './apis.ts';
import { appPages } from './apps.ts';
import { keyPages } from './keys.ts';
import { providerPages } from './providers.ts';
import { knownOperator, reasonOf } from './kit.ts';
import { userPages } from './users.ts';
import { trustPages } from './trust.ts';
import { webhookPages } from './webhooks.ts';
import { outboxPages } from './outbox.ts';
import { samlPages } from './saml.ts';
import { scimPages } from './scim.ts';
import { organizationPages } from './organizations.ts';
import { named } from '../plugin-name.ts';

export const consoleRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { pages } = options;
  // An operation's refusal (an unknown user, a taken name) is a page with the status the admin API gives it.
  // Anything else goes on to the server's one error handler (http/errors.ts).
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (!(error instanceof ManageError)) throw error;
    const operator = knownOperator(request);
    const ui = operator ? pages.ui(request, { user: operator.user.locale }) : pages.ui(request);
    return pages.send(
      reply,
      MANAGE_STATUS[error.kind],
      forbiddenPage(ui, reasonOf(ui, error), { href: CONSOLE_PATHS.dashboard, label: ui.t.text('console.title') }, ui.t.text('error.refused')),
    );
  });

  for (const noun of [
    activityPages,
    userPages,
    appPages,
    apiPages,
    providerPages,
    webhookPages,
    outboxPages,
    samlPages,
    scimPages,
    organizationPages,
    keyPages,
    trustPages,
  ])
    await app.register(named(noun), options);
};
