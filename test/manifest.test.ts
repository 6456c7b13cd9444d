import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { validateManifest } from '../src/manifest/validate';
import { png } from './support/images';

const BASE: Record<string, string> = {
  name: 'name: my-integration',
  title: 'title: My integration',
  description: 'description: Does useful things.',
  organization: 'organization: acme',
  visibility: 'visibility: private',
  scopes: 'scopes: [space:content:read]',
};

/** The six base lines (one can be replaced or dropped), then `extra` from line 7 on. */
function manifest(extra = '', replace: Record<string, string | null> = {}): string {
  const lines = Object.entries(BASE).map(([key, line]) => (key in replace ? replace[key] : line)).filter((line): line is string => line !== null);
  return `${[...lines, extra].join('\n')}\n`;
}

const jpeg = (width: number, height: number) => Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, height >> 8, height & 255, width >> 8, width & 255, 0x03]);
const files: Record<string, Buffer> = { 'icon.png': png(256, 256), 'wide.png': png(1600, 800), 'square.jpg': jpeg(800, 800), 'wide.jpg': jpeg(1600, 800), 'notes.txt': Buffer.from('hello') };
const readFile = (file: string) => files[file];

const prop = (lines: string) => `configurations:\n  account:\n    properties:\n      p:\n${lines.split('\n').map((l) => `        ${l}`).join('\n')}`;

/** [what, manifest text, path, line, message pattern]: one broken rule each. */
const cases: [string, string, string, number, RegExp][] = [
  // required fields
  ['missing name', manifest('', { name: null }), 'name', 1, /is required/],
  ['missing title', manifest('', { title: null }), 'title', 1, /is required/],
  ['missing description', manifest('', { description: null }), 'description', 1, /is required/],
  ['missing organization', manifest('', { organization: null }), 'organization', 1, /is required/],
  ['missing visibility', manifest('', { visibility: null }), 'visibility', 1, /is required/],
  ['missing scopes', manifest('', { scopes: null }), 'scopes', 1, /is required/],
  // name
  ['name with underscore', manifest('', { name: 'name: my_integration' }), 'name', 1, /hyphens/],
  ['name with double hyphen', manifest('', { name: 'name: my--integration' }), 'name', 1, /hyphens/],
  ['name with trailing hyphen', manifest('', { name: 'name: my-integration-' }), 'name', 1, /hyphens/],
  ['name over 64 characters', manifest('', { name: `name: ${'a'.repeat(65)}` }), 'name', 1, /at most 64/],
  ['name not a string', manifest('', { name: 'name: [a]' }), 'name', 1, /must be string/],
  // title, description, summary
  ['title of 1 character', manifest('', { title: 'title: X' }), 'title', 2, /at least 2/],
  ['title over 30 characters', manifest('', { title: `title: ${'t'.repeat(31)}` }), 'title', 2, /at most 30/],
  ['empty description', manifest('', { description: 'description: ""' }), 'description', 3, /must not be empty/],
  ['description over 100 characters', manifest('', { description: `description: ${'d'.repeat(101)}` }), 'description', 3, /at most 100/],
  ['summary over 2048 characters', manifest(`summary: ${'s'.repeat(2049)}`), 'summary', 7, /at most 2048/],
  ['summary not a string', manifest('summary: 12'), 'summary', 7, /must be string/],
  ['empty organization', manifest('', { organization: 'organization: ""' }), 'organization', 4, /must not be empty/],
  // visibility and scopes
  ['unknown visibility', manifest('', { visibility: 'visibility: secret' }), 'visibility', 5, /one of: private, unlisted, public/],
  ['unknown scope', manifest('', { scopes: 'scopes: [space:content:read, space:everything]' }), 'scopes[1]', 6, /must be one of/],
  ['duplicate scope', manifest('', { scopes: 'scopes: [openapi:read, openapi:read]' }), 'scopes', 6, /duplicate/],
  ['scopes not a list', manifest('', { scopes: 'scopes: openapi:read' }), 'scopes', 6, /must be array/],
  ['internal scope site:script:inject', manifest('', { scopes: 'scopes:\n  - site:script:inject' }), 'scopes[0]', 7, /reserved for the platform/],
  ['internal scope site:script:cookies', manifest('', { scopes: 'scopes:\n  - openapi:read\n  - site:script:cookies' }), 'scopes[1]', 8, /reserved for the platform/],
  // unknown keys
  ['unknown top-level key', manifest('colour: red'), 'colour', 7, /unknown key "colour"$/],
  ['misspelt categories', manifest('categoreis: [analytics]'), 'categoreis', 7, /did you mean "categories"\?/],
  ['misspelt visibility', manifest('', { visibility: 'visiblity: private' }), 'visiblity', 5, /did you mean "visibility"\?/],
  ['misspelt externalLinks', manifest('externalLink: []'), 'externalLink', 7, /did you mean "externalLinks"\?/],
  ['misspelt configurations', manifest('configuration: {}'), 'configuration', 7, /did you mean "configurations"\?/],
  // script, blocks, categories
  ['empty script', manifest('script: ""'), 'script', 7, /must not be empty/],
  ['block without id', manifest('blocks:\n  - title: A block'), 'blocks[0].id', 8, /is required/],
  ['block without title', manifest('blocks:\n  - id: counter'), 'blocks[0].title', 8, /is required/],
  ['block title of 1 character', manifest('blocks:\n  - id: counter\n    title: A'), 'blocks[0].title', 9, /at least 2/],
  ['block title over 40 characters', manifest(`blocks:\n  - id: counter\n    title: ${'b'.repeat(41)}`), 'blocks[0].title', 9, /at most 40/],
  ['block description over 150 characters', manifest(`blocks:\n  - id: counter\n    title: Counter\n    description: ${'b'.repeat(151)}`), 'blocks[0].description', 10, /at most 150/],
  ['block with an unknown key', manifest('blocks:\n  - id: counter\n    title: Counter\n    descripton: x'), 'blocks[0].descripton', 10, /did you mean "description"\?/],
  ['block id with spaces', manifest('blocks:\n  - id: my block\n    title: Counter'), 'blocks[0].id', 8, /letters, digits/],
  ['block listed twice', manifest('blocks:\n  - id: counter\n    title: Counter\n  - id: counter\n    title: Again'), 'blocks[1].id', 10, /listed twice/],
  ['unknown category', manifest('categories: [analytics, games]'), 'categories[1]', 7, /must be one of: analytics/],
  ['duplicate category', manifest('categories: [other, other]'), 'categories', 7, /duplicate/],
  // assets
  ['icon missing on disk', manifest('icon: missing.png'), 'icon', 7, /not found next to the manifest/],
  ['icon not an image', manifest('icon: notes.txt'), 'icon', 7, /not a PNG or JPEG/],
  ['icon outside the directory', manifest('icon: ../secret.png'), 'icon', 7, /local file next to the manifest/],
  ['icon as a URL', manifest('icon: https://example.com/icon.png'), 'icon', 7, /local file/],
  ['four preview images', manifest('previewImages: [wide.png, wide.png, wide.png, wide.png]'), 'previewImages', 7, /at most 3/],
  ['preview missing on disk', manifest('previewImages:\n  - wide.png\n  - gone.jpg'), 'previewImages[1]', 9, /not found/],
  // external links
  ['six external links', manifest(`externalLinks:\n${'  - {label: L, url: "https://x.dev"}\n'.repeat(6)}`), 'externalLinks', 8, /at most 5/],
  ['external link over http', manifest('externalLinks:\n  - label: Docs\n    url: http://docs.dev'), 'externalLinks[0].url', 9, /https:\/\//],
  ['external link without label', manifest('externalLinks:\n  - url: https://docs.dev'), 'externalLinks[0].label', 8, /is required/],
  ['external link with unknown key', manifest('externalLinks:\n  - label: Docs\n    url: https://docs.dev\n    ulr: x'), 'externalLinks[0].ulr', 10, /did you mean "url"\?/],
  // configurations
  ['configuration key other than account, space and site', manifest('configurations:\n  spaces:\n    properties: {}'), 'configurations.spaces', 8, /unknown key "spaces"; did you mean "space"\?/],
  ['property without type', manifest(prop('title: P')), 'configurations.account.properties.p.type', 10, /is required/],
  ['property of an unknown type', manifest(prop('type: date')), 'configurations.account.properties.p.type', 11, /one of: string, number, boolean, button/],
  ['enum on a number', manifest(prop('type: number\nenum: [1, 2]')), 'configurations.account.properties.p.enum', 12, /only allowed on string properties/],
  ['enum on a boolean', manifest(prop('type: boolean\nenum: [true]')), 'configurations.account.properties.p.enum', 12, /only allowed on string/],
  ['non-string enum value', manifest(prop('type: string\nenum: [a, 2]')), 'configurations.account.properties.p.enum[1]', 12, /enum values must be strings/],
  ['empty enum', manifest(prop('type: string\nenum: []')), 'configurations.account.properties.p.enum', 12, /fewer than 1/],
  ['string default of another type', manifest(prop('type: string\ndefault: 3')), 'configurations.account.properties.p.default', 12, /must be a string/],
  ['number default of another type', manifest(prop('type: number\ndefault: "3"')), 'configurations.account.properties.p.default', 12, /must be a number/],
  ['boolean default of another type', manifest(prop('type: boolean\ndefault: "yes"')), 'configurations.account.properties.p.default', 12, /must be a boolean/],
  ['default outside its enum', manifest(prop('type: string\nenum: [a, b]\ndefault: c')), 'configurations.account.properties.p.default', 13, /one of the enum values: a, b/],
  ['button without button_text', manifest(prop('type: button\ncallback_url: /oauth')), 'configurations.account.properties.p.button_text', 10, /required for button/],
  ['button without callback_url', manifest(prop('type: button\nbutton_text: Connect')), 'configurations.account.properties.p.callback_url', 10, /required for button/],
  ['button_text on a string', manifest(prop('type: string\nbutton_text: Go')), 'configurations.account.properties.p.button_text', 12, /a string property takes/],
  ['completion_url on a number', manifest(prop('type: number\ncompletion_url: /options')), 'configurations.account.properties.p.completion_url', 12, /unknown key "completion_url"/],
  ['misspelt property key', manifest(prop('type: string\ndescripion: x')), 'configurations.account.properties.p.descripion', 12, /did you mean "description"\?/],
  ['completion_url not a path', manifest(prop('type: string\ncompletion_url: options')), 'configurations.account.properties.p.completion_url', 12, /starting with a single \//],
  ['callback_url not a path', manifest(prop('type: button\nbutton_text: Go\ncallback_url: https://x')), 'configurations.account.properties.p.callback_url', 13, /starting with a single \//],
  ['callback_url to another host', manifest(prop('type: button\nbutton_text: Go\ncallback_url: //evil.example/cb')), 'configurations.account.properties.p.callback_url', 13, /starting with a single \//],
  // GitBook's fields, where they are wrong
  ['a target no platform has', manifest('target: everywhere'), 'target', 7, /must be one of: organization, space, site, all/],
  ['urlUnfurl that is not a list', manifest('blocks:\n  - id: card\n    title: Card\n    urlUnfurl: https://example.com'), 'blocks[0].urlUnfurl', 10, /must be array/],
  ['a markdown block without its body', manifest('blocks:\n  - id: card\n    title: Card\n    markdown:\n      codeblock: mermaid'), 'blocks[0].markdown.body', 10, /is required/],
  ['a configuration with properties and a componentId', manifest(`${prop('type: string')}\n    componentId: config`), 'configurations.account', 8, /properties or a componentId that renders it, not both/],
  ['a configuration with neither properties nor a componentId', manifest('configurations:\n  space:\n    required: []'), 'configurations.space', 8, /needs properties, or a componentId that renders it/],
  ['an environment of a bad name', manifest('envs:\n  "dev steeve":\n    organization: other'), 'envs.dev steeve', 8, /not a valid name|must match pattern/],
  ['a property named __proto__', manifest('configurations:\n  account:\n    properties:\n      __proto__: { type: string }'), 'configurations.account.properties.__proto__', 10, /not __proto__/],
  ['external link with spaces', manifest('externalLinks:\n  - label: Docs\n    url: "https://a b"'), 'externalLinks[0].url', 9, /https:\/\/ URL|not a valid URL/],
  ['an alias bomb', manifest(`a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [${Array(10).fill('*a').join(', ')}]\nc: &c [${Array(10).fill('*b').join(', ')}]\nd: [${Array(10).fill('*c').join(', ')}]`), '(yaml)', 1, /alias/i],
  ['required naming no property', manifest(`${prop('type: string')}\n    required: [p, q]`), 'configurations.account.required[1]', 12, /names no property; properties: p/],
  ['site configuration with a broken property', manifest('configurations:\n  site:\n    properties:\n      s:\n        type: string\n        default: false'), 'configurations.site.properties.s.default', 12, /must be a string/],
  // secrets
  ['secret that is not a substitution', manifest('secrets:\n  API_KEY: plain-value'), 'secrets.API_KEY', 8, /\$\{\{ env\.NAME \}\}/],
  ['secret substitution of a bad name', manifest('secrets:\n  API_KEY: ${{ env.1KEY }}'), 'secrets.API_KEY', 8, /environment substitution/],
  ['secret with a bad name', manifest('secrets:\n  api-key: ${{ env.KEY }}'), 'secrets.api-key', 8, /not a valid name/],
  ['secret substitution with a line break inside the braces', manifest('secrets:\n  API_KEY: "${{\\n env.KEY }}"'), 'secrets.API_KEY', 8, /on one line/],
  ['secret substitution of __proto__', manifest('secrets:\n  API_KEY: ${{ env.__proto__ }}'), 'secrets.API_KEY', 8, /not __proto__, constructor or prototype/],
  ['secret substitution of constructor', manifest('secrets:\n  API_KEY: ${{ env.constructor }}'), 'secrets.API_KEY', 8, /not __proto__, constructor or prototype/],
  ['secret substitution of a 5,000-character name', manifest(`secrets:\n  API_KEY: \${{ env.${'A'.repeat(5000)} }}`), 'secrets.API_KEY', 8, /at most 128/],
  ['21 secrets', manifest(`secrets:\n${Array.from({ length: 21 }, (_, i) => `  S${i}: \${{ env.S${i} }}`).join('\n')}`), 'secrets', 8, /at most 20/],
  // YAML itself
  ['YAML syntax error (reported where the list should have closed)', manifest('blocks: [unclosed'), '(yaml)', 8, /must be sufficiently indented and end with a \]/],
  ['duplicate YAML key', manifest('title: Again'), '(yaml)', 7, /unique/i],
  ['not a mapping', '- just\n- a list\n', '(root)', 1, /YAML mapping/],
];

describe('manifest validation', function () {
  it(`has at least 60 broken-manifest cases (${cases.length})`, function () {
    assert.ok(cases.length >= 60);
  });

  for (const [what, text, path, line, message] of cases) {
    it(`${what}: ${path} at line ${line}`, function () {
      const { errors, manifest } = validateManifest(text, { readFile });
      assert.equal(manifest, undefined);
      const match = errors.find((error) => error.path === path);
      assert.ok(match, `no error at ${path}; got ${JSON.stringify(errors)}`);
      assert.equal(match.line, line, `line of ${path}`);
      assert.ok(match.column >= 1);
      assert.match(match.message, message);
    });
  }

  it('reports every error at once, in line order', function () {
    const { errors } = validateManifest(manifest('colour: red\nsummary: 3', { title: 'title: X', visibility: 'visibility: open' }), { readFile });
    assert.deepEqual(errors.map((e) => [e.path, e.line]), [['title', 2], ['visibility', 5], ['colour', 7], ['summary', 8]]);
  });

  it('checks blocks against the components the script registers', function () {
    const text = manifest('blocks:\n  - id: counter\n    title: Counter\n  - id: chart\n    title: Chart');
    assert.deepEqual(validateManifest(text, { componentIds: ['counter', 'chart'] }).errors, []);
    const { errors } = validateManifest(text, { componentIds: ['counter'] });
    assert.deepEqual(errors.map((e) => [e.path, e.line]), [['blocks[1].id', 10]]);
    assert.match(errors[0]!.message, /registers no component "chart"; it registers: counter/);
  });

  it('warns, without failing, about a preview that is not 2:1', function () {
    const { errors, warnings } = validateManifest(manifest('icon: icon.png\npreviewImages: [wide.png, wide.jpg, square.jpg]'), { readFile });
    assert.deepEqual(errors, []);
    assert.deepEqual(warnings.map((w) => [w.path, w.line]), [['previewImages[2]', 8]]);
    assert.match(warnings[0]!.message, /800 x 800; previews should be 2:1 \(1600 x 800 recommended\)/);
  });

  it('checks a configuration rendered by a component against the components the script registers', function () {
    const text = manifest('configurations:\n  account:\n    componentId: config');
    assert.deepEqual(validateManifest(text, { componentIds: ['config'] }).errors, []);
    const { errors } = validateManifest(text, { componentIds: ['card'] });
    assert.deepEqual(errors.map((e) => [e.path, e.line, e.message]), [['configurations.account.componentId', 9, 'the script registers no component "config"; it registers: card']]);
  });

  it('lets only the platform’s own integrations request internal scopes', function () {
    const text = manifest('', { scopes: 'scopes: [site:script:inject, site:script:cookies]' });
    assert.equal(validateManifest(text).errors.length, 2);
    assert.deepEqual(validateManifest(text, { platformOwned: true }).errors, []);
  });

  describe('golden manifests', function () {
    const dir = path.join(__dirname, '..', '..', 'test', 'fixtures', 'manifests');
    for (const file of readdirSync(dir).filter((name) => name.endsWith('.yaml'))) {
      it(`${file} is valid`, function () {
        const { errors, manifest: parsed } = validateManifest(readFileSync(path.join(dir, file), 'utf8'), { readFile, platformOwned: file === 'webhook.yaml' });
        assert.deepEqual(errors, []);
        assert.ok(parsed?.name);
      });
    }
  });
});
