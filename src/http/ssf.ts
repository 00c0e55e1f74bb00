/**
 * The Shared Signals transmitter's doors (OpenID SSF 1.0): its metadata (§7), stream
 * management (§8.1) and each polling stream's endpoint (RFC 8936). JSON in and out; the
 * operations are flows/ssf/. A receiver calls with a client_credentials access token for
 * `<issuer>/ssf` holding `ssf:manage` (§7.1 authorization_schemes: RFC 6749), as a Bearer
 * or DPoP token; errors about it are RFC 6750's, with the challenge.
 */
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import {
  JWKS_PATH,
  SSF_ADD_SUBJECT_PATH,
  SSF_CONFIGURATION_PATH,
  SSF_POLL_PATH,
  SSF_REMOVE_SUBJECT_PATH,
  SSF_STATUS_PATH,
  SSF_STREAMS_PATH,
  SSF_VERIFY_PATH,
} from '../core/endpoints.ts';
import { SSF_DELIVERY_METHODS } from '../core/ssf.ts';
import { poll, PollError } from '../flows/ssf/poll.ts';
import {
  changeStream,
  changeSubject,
  createStream,
  deleteStream,
  readStreams,
  setStreamStatus,
  SsfError,
  ssfReceiver,
  streamConfiguration,
  streamStatus,
  verifyStream,
  type StreamDeps,
} from '../flows/ssf/streams.ts';
import { accessTokenCredential, bearerChallenge } from './bearer.ts';
import type { AppDeps } from './deps.ts';
import { forRequest } from './deps.ts';
import { requestProof } from './dpop.ts';
import { toOAuthError } from './errors.ts';
import { named } from './plugin-name.ts';

/** SSF 1.0 §7.1 Transmitter Configuration Metadata: exactly what is implemented. */
export function ssfMetadata(issuer: string, defaultSubjects: 'ALL' | 'NONE'): Record<string, unknown> {
  return {
    spec_version: '1_0',
    issuer,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    delivery_methods_supported: SSF_DELIVERY_METHODS,
    configuration_endpoint: `${issuer}${SSF_STREAMS_PATH}`,
    status_endpoint: `${issuer}${SSF_STATUS_PATH}`,
    verification_endpoint: `${issuer}${SSF_VERIFY_PATH}`,
    add_subject_endpoint: `${issuer}${SSF_ADD_SUBJECT_PATH}`,
    remove_subject_endpoint: `${issuer}${SSF_REMOVE_SUBJECT_PATH}`,
    // §7.1: OAuth 2.0 (a client_credentials token for `<issuer>/ssf` with the scope ssf:manage).
    authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
    // §7.1: what a stream made now hears of: every person but those removed (ALL), or only those added (NONE).
    default_subjects: defaultSubjects,
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The receiver (client id) an SSF request is from, once its token is checked. */
    ssfReceiver?: string;
  }
}

export const ssfRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  // A long poll waiting for a SET ends (answering none) when the server begins to stop, rather than hold its stop up.
  const stopping = new AbortController();
  app.addHook('preClose', async () => stopping.abort());
  app.get(SSF_CONFIGURATION_PATH, async (_request, reply) =>
    reply
      .header('Cache-Control', 'public, max-age=300')
      .header('Access-Control-Allow-Origin', '*')
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(ssfMetadata(deps.config.issuer, deps.config.ssf.defaultSubjects))),
  );

  await app.register(
    named(async (api) => {
      api.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_request, text, done) => {
        if (text === '') return done(null, undefined);
        try {
          done(null, JSON.parse(text as string));
        } catch {
          done(new SsfError(400, 'invalid_request', 'the body is not JSON') as unknown as FastifyError, undefined);
        }
      });

      // RFC 6750 §3: who calls, before anything else of the request is read.
      api.addHook('onRequest', async (request, reply) => {
        reply.header('Cache-Control', 'no-store');
        const credential = accessTokenCredential(request, { query: {}, body: {} });
        if (credential === null) {
          reply.header('WWW-Authenticate', bearerChallenge());
          return reply.code(401).send({
            error: 'invalid_token',
            error_description: 'an access token is required: Authorization: Bearer <a client_credentials token for the resource <issuer>/ssf>',
          });
        }
        const path = request.url.split('?')[0]!;
        const proof = credential.scheme === 'DPoP' ? await requestProof(deps, request, reply, path, credential.token) : null;
        request.ssfReceiver = await ssfReceiver(deps, { ...credential, proof });
      });

      api.setErrorHandler((error: FastifyError, request, reply) => {
        const ssf = error instanceof SsfError ? error : null;
        // RFC 8936 §2.6 and RFC 8935 §2.3: `err` and `description`.
        if (ssf instanceof PollError) return reply.code(400).send({ err: ssf.code, description: ssf.message });
        if (ssf !== null) return reply.code(ssf.status).send({ error: ssf.code, error_description: ssf.message });
        const oauth = toOAuthError(error);
        if (oauth.code === 'invalid_token' || oauth.code === 'insufficient_scope' || oauth.code === 'invalid_dpop_proof') {
          reply.header('WWW-Authenticate', oauth.code === 'insufficient_scope' ? `${bearerChallenge(oauth)}, scope="ssf:manage"` : bearerChallenge(oauth));
        }
        if (oauth.status >= 500) request.log.error({ err: error }, 'SSF request failed');
        return reply.code(oauth.status).send({ error: oauth.code, error_description: oauth.description });
      });

      const depsOf = (request: FastifyRequest): StreamDeps => forRequest(deps, request);
      const receiver = (request: FastifyRequest): string => request.ssfReceiver!;
      const config = (stream: Parameters<typeof streamConfiguration>[1]) => streamConfiguration(deps.config.issuer, stream);
      const queryId = (request: FastifyRequest) => (request.query as Record<string, unknown>)['stream_id'];
      const json = (reply: FastifyReply, status: number, body: unknown) =>
        reply.code(status).type('application/json; charset=utf-8').send(JSON.stringify(body));

      // §8.1.1.1: 201 and the configuration.
      api.post(SSF_STREAMS_PATH, async (request, reply) => json(reply, 201, config(await createStream(depsOf(request), receiver(request), request.body))));
      // §8.1.1.2: one by stream_id, or every one of the receiver's.
      api.get(SSF_STREAMS_PATH, async (request, reply) => {
        const found = await readStreams(depsOf(request), receiver(request), queryId(request));
        return json(reply, 200, Array.isArray(found) ? found.map(config) : config(found));
      });
      // §8.1.1.3 (PATCH) and §8.1.1.4 (PUT).
      api.patch(SSF_STREAMS_PATH, async (request, reply) =>
        json(reply, 200, config(await changeStream(depsOf(request), receiver(request), request.body, false))),
      );
      api.put(SSF_STREAMS_PATH, async (request, reply) => json(reply, 200, config(await changeStream(depsOf(request), receiver(request), request.body, true))));
      // §8.1.1.5: 204.
      api.delete(SSF_STREAMS_PATH, async (request, reply) => {
        await deleteStream(depsOf(request), receiver(request), queryId(request));
        return reply.code(204).send();
      });
      // §8.1.2.1 and §8.1.2.2.
      api.get(SSF_STATUS_PATH, async (request, reply) => json(reply, 200, await streamStatus(depsOf(request), receiver(request), queryId(request))));
      api.post(SSF_STATUS_PATH, async (request, reply) => json(reply, 200, await setStreamStatus(depsOf(request), receiver(request), request.body)));
      // §8.1.4.2: 204; the event follows on the stream.
      api.post(SSF_VERIFY_PATH, async (request, reply) => {
        await verifyStream(depsOf(request), receiver(request), request.body);
        return reply.code(204).send();
      });
      // §8.1.3.2: "an empty 200 OK"; §8.1.3.3: "204 No Content". Fastify reads `::` as one literal colon.
      api.post(SSF_ADD_SUBJECT_PATH.replace(':', '::'), async (request, reply) => {
        await changeSubject(depsOf(request), receiver(request), request.body, 'added');
        return reply.code(200).send();
      });
      api.post(SSF_REMOVE_SUBJECT_PATH.replace(':', '::'), async (request, reply) => {
        await changeSubject(depsOf(request), receiver(request), request.body, 'removed');
        return reply.code(204).send();
      });
      // RFC 8936 §2.4: the stream's poll endpoint; another receiver's stream is none.
      api.post(`${SSF_POLL_PATH}/:streamId`, async (request, reply) => {
        const { streamId } = request.params as { streamId: string };
        const stream = await deps.store.ssf.getStream(streamId);
        if (stream === null || stream.clientId !== receiver(request)) throw new SsfError(404, 'not_found', 'no such stream');
        const gone = new AbortController();
        // The receiver went away: the response closes before it is sent.
        reply.raw.once('close', () => gone.abort());
        return json(reply, 200, await poll(depsOf(request), stream, request.body, AbortSignal.any([gone.signal, stopping.signal])));
      });
    }, 'ssfStreamApi'),
  );
};
