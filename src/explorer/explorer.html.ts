import { DEFAULT_DOCUMENT, DEFAULT_VARIABLES, TOKEN_STORAGE_KEY, jsonForHtml } from './default-operation.js';

/**
 * The offline GraphiQL page at GET /explorer. Everything it loads comes from this service
 * (`/explorer/...`: the page's own script and style, React, ReactDOM and GraphiQL from
 * node_modules), so it works without internet; its Content-Security-Policy forbids anything else.
 */

export interface ExplorerPageOptions {
  /** Where GraphQL requests go. */
  endpoint: string;
  /** URL prefix of the assets, e.g. `/explorer`. */
  base: string;
}

/** Sent with the page: only this origin, no inline script; GraphiQL's editors need inline styles. */
export const EXPLORER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self' data:",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'self'",
].join('; ');

export function explorerHtml({ endpoint, base }: ExplorerPageOptions): string {
  const config = {
    endpoint,
    tokenKey: TOKEN_STORAGE_KEY,
    defaultQuery: DEFAULT_DOCUMENT,
    defaultVariables: JSON.stringify(DEFAULT_VARIABLES, null, 2),
  };
  return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <meta name="robots" content="noindex" />
  <title>Baton · GraphQL explorer</title>
  <link rel="icon" href="data:," />
  <link rel="stylesheet" href="${base}/vendor/graphiql.min.css" />
  <link rel="stylesheet" href="${base}/explorer.css" />
</head>
<body>
  <main id="token-gate" class="gate">
    <form id="token-form" class="card" autocomplete="off">
      <h1>Baton · GraphQL explorer</h1>
      <p>Every request to <code>${endpoint}</code> needs an API token, sent as <code>Authorization: Bearer &lt;token&gt;</code>.
        <code>baton tokens create --app &lt;appId&gt;</code> prints one; <code>npm start</code> prints one for app <code>demo</code> on a fresh store.</p>
      <label for="token-input">API token</label>
      <input id="token-input" name="token" type="password" required spellcheck="false" autocapitalize="off" placeholder="paste your API token" />
      <p id="token-error" class="error" role="alert" hidden></p>
      <button id="token-submit" type="submit">Open explorer</button>
      <p class="note">The token is kept in this tab's session storage only and sent only to this server.
        This explorer (GraphiQL) is served by Baton itself and works offline; <a href="${endpoint}">Apollo Sandbox</a> needs internet.</p>
    </form>
  </main>
  <header id="bar" class="bar" hidden>
    <strong>Baton</strong>
    <span>token <code id="token-hint"></code></span>
    <button id="change-token" type="button">Change token</button>
    <span id="token-rejected" class="error" role="alert" hidden>The server rejected this token (401): change it.</span>
    <a class="right" href="${endpoint}">Apollo Sandbox</a>
  </header>
  <div id="graphiql" hidden></div>
  <noscript>This explorer needs JavaScript.</noscript>
  <script id="explorer-config" type="application/json">${jsonForHtml(config)}</script>
  <script src="${base}/vendor/react.production.min.js"></script>
  <script src="${base}/vendor/react-dom.production.min.js"></script>
  <script src="${base}/vendor/graphiql.min.js"></script>
  <script src="${base}/explorer.js"></script>
</body>
</html>
`;
}

/** The look both explorer pages share: the token gate, its card, the bar above the explorer. */
export const pageCss = (accent: string): string => `html, body { height: 100%; margin: 0; }
body { display: flex; flex-direction: column; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b2240; background: #f5f6fa; }
[hidden] { display: none !important; }
.gate { flex: 1; display: flex; align-items: center; justify-content: center; padding: 1rem; }
.card { max-width: 34rem; width: 100%; background: #fff; border-radius: 10px; padding: 1.5rem 2rem; box-shadow: 0 2px 12px rgba(0,0,0,.08); }
.card h1 { font-size: 1.3rem; margin-top: 0; }
.card label { display: block; font-weight: 600; margin: 1rem 0 .3rem; }
.card input { box-sizing: border-box; width: 100%; padding: .55rem .7rem; font: inherit; font-family: ui-monospace, monospace; border: 1px solid #bcc2d4; border-radius: 6px; }
.card button { margin-top: 1rem; padding: .55rem 1.2rem; font: inherit; font-weight: 600; color: #fff; background: ${accent}; border: 0; border-radius: 6px; cursor: pointer; }
.note { font-size: .85rem; color: #5a6280; }
.error { color: #b00020; font-weight: 600; }
code { font-family: ui-monospace, monospace; font-size: .9em; }
.bar { display: flex; align-items: center; gap: 1rem; padding: .35rem 1rem; font-size: .85rem; background: #fff; border-bottom: 1px solid #e0e3ee; }
.bar button { font: inherit; padding: .15rem .6rem; border: 1px solid #bcc2d4; border-radius: 4px; background: #fff; cursor: pointer; }
.bar .right { margin-left: auto; }
`;

export const EXPLORER_CSS = `${pageCss('#d60590')}#graphiql { flex: 1; min-height: 0; }
`;

/** Runs in the browser (plain ES2017, no modules): the token gate, then GraphiQL. */
export const EXPLORER_JS = `(function () {
  'use strict';
  var config = JSON.parse(document.getElementById('explorer-config').textContent);
  var gate = document.getElementById('token-gate');
  var form = document.getElementById('token-form');
  var input = document.getElementById('token-input');
  var formError = document.getElementById('token-error');
  var bar = document.getElementById('bar');
  var hint = document.getElementById('token-hint');
  var rejected = document.getElementById('token-rejected');
  var container = document.getElementById('graphiql');
  var root = null;

  function storedToken() {
    try { return sessionStorage.getItem(config.tokenKey) || ''; } catch (e) { return ''; }
  }
  function storeToken(token) {
    try {
      if (token) sessionStorage.setItem(config.tokenKey, token); else sessionStorage.removeItem(config.tokenKey);
    } catch (e) { /* storage disabled: the token lives until the page is left */ }
  }

  function hasStoredTabs() {
    try { return localStorage.getItem('graphiql:tabState') !== null; } catch (e) { return false; }
  }

  function askForToken(message) {
    if (root) { root.unmount(); root = null; }
    container.hidden = true;
    bar.hidden = true;
    gate.hidden = false;
    formError.textContent = message || '';
    formError.hidden = !message;
    input.value = '';
    input.focus();
  }

  function start(token) {
    gate.hidden = true;
    bar.hidden = false;
    rejected.hidden = true;
    container.hidden = false;
    hint.textContent = token.length > 8 ? '\\u2026' + token.slice(-4) : '\\u2026';
    var fetcher = GraphiQL.createFetcher({
      url: config.endpoint,
      headers: { Authorization: 'Bearer ' + token },
      fetch: function (url, init) {
        return window.fetch(url, init).then(function (response) {
          if (response.status === 401) rejected.hidden = false;
          return response;
        });
      },
    });
    var props = {
      fetcher: fetcher,
      defaultQuery: config.defaultQuery,
      defaultEditorToolbarOpen: true,
    };
    // ?query=...&variables=... open (or select) a tab with that operation; otherwise a first visit
    // starts with the dispatchWorkflow example and later visits with the tabs GraphiQL stored.
    // (Props rather than \`defaultTabs\`: GraphiQL 3 leaves the variables editor of a default tab empty.)
    var params = new URLSearchParams(window.location.search);
    if (params.has('query') || params.has('variables')) {
      props.query = params.get('query') || config.defaultQuery;
      props.variables = params.get('variables') || undefined;
    } else if (!hasStoredTabs()) {
      props.query = config.defaultQuery;
      props.variables = config.defaultVariables;
    }
    root = ReactDOM.createRoot(container);
    root.render(React.createElement(GraphiQL, props, React.createElement(GraphiQL.Logo, null, 'Baton')));
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var token = input.value.trim().replace(/^Bearer\\s+/i, '');
    if (!token) { askForToken('Enter an API token.'); return; }
    if (/\\s/.test(token)) { askForToken('A token has no spaces: paste only the token.'); return; }
    storeToken(token);
    start(token);
  });
  document.getElementById('change-token').addEventListener('click', function () {
    storeToken('');
    askForToken('');
  });

  var token = storedToken();
  if (token) start(token); else askForToken('');
})();
`;
