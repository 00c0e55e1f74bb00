import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../config/index.ts';
import { formPostPage } from './form-post.ts';
import { messages } from './i18n.ts';

const ui = { site: loadConfig({}).site, t: messages('en'), here: '/oauth/authorize' };

describe('the form_post page (OAuth 2.0 Form Post Response Mode §2)', () => {
  it("writes every value as text in its attribute: a client's state cannot end the input or the form", () => {
    // state is the client's, any string (RFC 6749 §4.1.1); the error description may quote the request.
    const state = `"><script>alert(1)</script><input name="code" value="forged`;
    const page = formPostPage(ui, {
      redirectUri: 'https://app.example/cb?x=1&y="2"',
      params: { code: 'abc', state, error_description: "it's <b>bad</b> & wrong" },
    });
    assert.ok(!page.includes('<script>alert(1)'), 'no script of the state');
    assert.equal(page.match(/<input\b/g)?.length, 3, 'one input each, no more');
    assert.ok(
      page.includes('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;input name=&quot;code&quot; value=&quot;forged"'),
      'the state, escaped, whole',
    );
    assert.ok(page.includes('value="it&#39;s &lt;b&gt;bad&lt;/b&gt; &amp; wrong"'));
    assert.ok(page.includes('action="https://app.example/cb?x=1&amp;y=&quot;2&quot;"'));
  });
});
