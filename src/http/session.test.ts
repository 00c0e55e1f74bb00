/**
 * The attributes the HTTP layer's cookie port (http/session.ts `cookiePort`) gives every cookie
 * a flow sets or clears, checked over a recorded reply without a server: what a `__Host-` name
 * needs on an https issuer, and what a browser sends back over http on loopback.
 * src/flows/session/cookies.test.ts covers the names and what a cookie is worth;
 * test/authorize-errors.test.ts reads the Set-Cookie header of a running server.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { loadConfig } from '../config/index.ts';
import { cookieNames } from '../flows/session/cookies.ts';
import { cookiePort } from './session.ts';

/** What `cookiePort` asked of Fastify's reply: each cookie set or cleared, with its options. */
function recordedReply() {
  const calls: { op: 'set' | 'clear'; name: string; value: string | null; options: Record<string, unknown> }[] = [];
  const reply = {
    setCookie: (name: string, value: string, options: Record<string, unknown>) => void calls.push({ op: 'set', name, value, options }),
    clearCookie: (name: string, options: Record<string, unknown>) => void calls.push({ op: 'clear', name, value: null, options }),
  };
  return { calls, reply: reply as unknown as FastifyReply };
}

describe("the attributes of every cookie a flow sets (http/session.ts's cookie port)", () => {
  const request = (cookies: Record<string, string> = {}) => ({ cookies }) as unknown as FastifyRequest;

  it('sets an https cookie HttpOnly, Secure, SameSite=Lax, Path=/ with no Domain, for the age the flow asked: what a __Host- name needs', () => {
    const config = loadConfig({ TESSERA_ISSUER: 'https://auth.example.com' });
    const { calls, reply } = recordedReply();
    const port = cookiePort(config, request(), reply);
    port.set(cookieNames(config).session, 'value', 3600);
    port.clear(cookieNames(config).session);
    assert.deepEqual(calls, [
      { op: 'set', name: '__Host-tessera_session', value: 'value', options: { path: '/', httpOnly: true, sameSite: 'lax', secure: true, maxAge: 3600 } },
      // A __Host- cookie is only replaced (and so cleared) by one with the same attributes.
      { op: 'clear', name: '__Host-tessera_session', value: null, options: { path: '/', httpOnly: true, sameSite: 'lax', secure: true } },
    ]);
  });

  it('sets an http loopback cookie without Secure, which the browser would not send back over http, and otherwise alike', () => {
    const config = loadConfig({ TESSERA_ISSUER: 'http://localhost:8080' });
    const { calls, reply } = recordedReply();
    const port = cookiePort(config, request(), reply);
    port.set(cookieNames(config).pending, 'value', 300);
    port.clear(cookieNames(config).pending);
    assert.deepEqual(
      calls.map((call) => [call.op, call.name, call.options]),
      [
        ['set', 'tessera_pending', { path: '/', httpOnly: true, sameSite: 'lax', secure: false, maxAge: 300 }],
        ['clear', 'tessera_pending', { path: '/', httpOnly: true, sameSite: 'lax', secure: false }],
      ],
    );
  });

  it('reads the value the browser sent under the name asked, and nothing under another: not the bare name a sibling site could plant', () => {
    const config = loadConfig({ TESSERA_ISSUER: 'https://auth.example.com' });
    const port = cookiePort(config, request({ '__Host-tessera_session': 'sent', tessera_pending: 'planted' }), recordedReply().reply);
    assert.equal(port.read('__Host-tessera_session'), 'sent');
    assert.equal(port.read('__Host-tessera_pending'), undefined);
  });
});
