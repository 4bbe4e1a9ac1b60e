import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { randomBytes } from 'node:crypto';
import { DEFAULT_DOCUMENT, DEFAULT_VARIABLES, TOKEN_STORAGE_KEY, jsonForHtml } from './default-operation.js';
import { pageCss } from './explorer.html.js';

export interface SandboxLandingPageOptions {
  /** Version path of the embeddable Sandbox on Apollo's CDN (default: the pinned `SANDBOX_VERSION`). */
  version?: string;
  /** Where the "offline explorer" link points. */
  explorerPath?: string;
}

const SANDBOX_CDN = 'https://embeddable-sandbox.cdn.apollographql.com';

/**
 * The embeddable Sandbox build this page loads, pinned to one immutable build path on Apollo's CDN
 * (`_latest` would run whatever Apollo publishes next in this page, next to the token in session
 * storage). Moving to a newer build is a reviewed change of this constant. The loader frames
 * Apollo's Sandbox application (sandbox.embed.apollographql.com, not versioned) and hands it the
 * token as a shared header: that application is Apollo's current one whatever this pins.
 */
export const SANDBOX_VERSION = '02e2da0fccbe0240ef03d2396d6c98559bab5b06';

/**
 * The page a browser gets for GET /graphql (`Accept: text/html`): it asks for the API token first
 * (kept in sessionStorage, shared with /explorer), then embeds Apollo Sandbox from Apollo's CDN
 * with `Authorization: Bearer <token>` as a shared header on every request, and links to the
 * offline GraphiQL explorer. Replaces Apollo's default landing page, so install it with
 * `graphiql: false` (Nest's own GraphiQL landing page would otherwise be a second one).
 */
export function sandboxLandingPage(options: SandboxLandingPageOptions = {}): ApolloServerPlugin<BaseContext> {
  const version = options.version ?? SANDBOX_VERSION;
  const explorerPath = options.explorerPath ?? '/explorer';
  return {
    async serverWillStart() {
      return {
        async renderLandingPage() {
          return { html: async () => sandboxLandingHtml({ version, explorerPath, nonce: randomBytes(16).toString('base64') }) };
        },
      };
    },
  };
}

/** Same sources as Apollo's own landing page allows, plus this page's nonce. */
function contentSecurityPolicy(nonce: string): string {
  return [
    `script-src 'self' 'nonce-${nonce}' ${SANDBOX_CDN}`,
    `style-src 'nonce-${nonce}' ${SANDBOX_CDN} https://fonts.googleapis.com`,
    'img-src data: https://apollo-server-landing-page.cdn.apollographql.com',
    'manifest-src https://apollo-server-landing-page.cdn.apollographql.com',
    'frame-src https://sandbox.embed.apollographql.com',
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

export function sandboxLandingHtml({ version, explorerPath, nonce }: { version: string; explorerPath: string; nonce: string }): string {
  const config = {
    tokenKey: TOKEN_STORAGE_KEY,
    scriptUrl: `${SANDBOX_CDN}/${encodeURIComponent(version)}/embeddable-sandbox.umd.production.min.js`,
    document: DEFAULT_DOCUMENT,
    variables: DEFAULT_VARIABLES,
  };
  return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <meta name="robots" content="noindex" />
  <meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(nonce)}" />
  <title>Baton · GraphQL API</title>
  <link rel="icon" href="data:," />
  <style nonce="${nonce}">
${pageCss('#3f20ba')}
    #sandbox { flex: 1; min-height: 0; }
    #sandbox iframe { width: 100%; height: 100%; border: none; background: #fff; }
  </style>
</head>
<body>
  <main id="token-gate" class="gate">
    <form id="token-form" class="card" autocomplete="off">
      <h1>Baton · GraphQL API</h1>
      <p>Every request to this endpoint needs an API token, sent as <code>Authorization: Bearer &lt;token&gt;</code>.
        <code>baton tokens create --app &lt;appId&gt;</code> prints one; <code>npm start</code> prints one for app <code>demo</code> on a fresh store.</p>
      <label for="token-input">API token</label>
      <input id="token-input" name="token" type="password" required spellcheck="false" autocapitalize="off" placeholder="paste your API token" />
      <p id="token-error" class="error" role="alert" hidden></p>
      <button id="token-submit" type="submit">Open Apollo Sandbox</button>
      <p class="note">The token is kept in this tab's session storage and added to every request Sandbox sends to this server.
        Apollo Sandbox loads from Apollo's CDN, so it needs internet. Offline? Use the <a href="${explorerPath}">built-in GraphiQL explorer</a>, served by Baton itself.</p>
    </form>
  </main>
  <header id="bar" class="bar" hidden>
    <strong>Baton</strong>
    <span>token <code id="token-hint"></code></span>
    <button id="change-token" type="button">Change token</button>
    <span id="load-error" class="error" role="alert" hidden>Apollo Sandbox could not be loaded from Apollo's CDN (offline?). Use the offline explorer.</span>
    <a class="right" href="${explorerPath}">Offline explorer (GraphiQL)</a>
  </header>
  <div id="sandbox" hidden></div>
  <noscript>Apollo Sandbox needs JavaScript. Send POST requests with <code>Authorization: Bearer &lt;token&gt;</code> instead.</noscript>
  <script nonce="${nonce}">
  (function () {
    'use strict';
    var config = ${jsonForHtml(config)};
    var nonce = ${jsonForHtml(nonce)};
    var gate = document.getElementById('token-gate');
    var form = document.getElementById('token-form');
    var input = document.getElementById('token-input');
    var formError = document.getElementById('token-error');
    function storedToken() {
      try { return sessionStorage.getItem(config.tokenKey) || ''; } catch (e) { return ''; }
    }
    function storeToken(token) {
      try {
        if (token) sessionStorage.setItem(config.tokenKey, token); else sessionStorage.removeItem(config.tokenKey);
      } catch (e) { /* storage disabled */ }
    }
    function start(token) {
      gate.hidden = true;
      document.getElementById('bar').hidden = false;
      document.getElementById('sandbox').hidden = false;
      document.getElementById('token-hint').textContent = token.length > 8 ? '\\u2026' + token.slice(-4) : '\\u2026';
      var script = document.createElement('script');
      script.src = config.scriptUrl;
      script.nonce = nonce;
      script.onerror = function () { document.getElementById('load-error').hidden = false; };
      script.onload = function () {
        new window.EmbeddedSandbox({
          target: '#sandbox',
          initialEndpoint: window.location.href.split('#')[0].split('?')[0],
          initialState: {
            document: config.document,
            variables: config.variables,
            sharedHeaders: { Authorization: 'Bearer ' + token },
            includeCookies: false,
          },
          hideCookieToggle: true,
          endpointIsEditable: false,
          runTelemetry: false,
          allowDynamicStyles: false,
        });
      };
      document.body.appendChild(script);
    }
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var token = input.value.trim().replace(/^Bearer\\s+/i, '');
      if (!token || /\\s/.test(token)) {
        formError.textContent = token ? 'A token has no spaces: paste only the token.' : 'Enter an API token.';
        formError.hidden = false;
        return;
      }
      storeToken(token);
      start(token);
    });
    document.getElementById('change-token').addEventListener('click', function () {
      storeToken('');
      window.location.reload();
    });
    var token = storedToken();
    if (token) start(token); else input.focus();
  })();
  </script>
</body>
</html>
`;
}
