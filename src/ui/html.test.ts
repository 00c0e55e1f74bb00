import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { html } from './html.ts';

describe('html', () => {
  it('escapes interpolated text, including quotes for attributes', () => {
    const name = `<script>alert("x")</script>' onmouseover='`;
    assert.equal(
      html`<p title="${name}">${name}</p>`.value,
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;</p>',
    );
  });

  it('nests html output without escaping it twice and joins arrays', () => {
    const items = ['a&b', 'c'].map((item) => html`<li>${item}</li>`);
    assert.equal(html`<ul>${items}</ul>`.value, '<ul><li>a&amp;b</li><li>c</li></ul>');
  });

  it('renders null, undefined and false as nothing', () => {
    assert.equal(html`[${null}${undefined}${false}${0}]`.value, '[0]');
  });
});
