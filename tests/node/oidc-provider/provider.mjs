// A real OpenID Connect provider (npm's certified `oidc-provider`) on loopback, for the single sign-on tests
// (tests/config/test_sso.py). `node provider.mjs CONFIG` where CONFIG is JSON:
//   {"port": 40123,
//    "client": {"client_id", "client_secret", "redirect_uris": [...], "post_logout_redirect_uris": [...]},
//    "accounts": {"<login>": {"email", "name", "groups": [...], "tamper": "<mode>"?}}}
// It prints `listening on <issuer>` once it answers. Sign-in goes through the library's own interaction
// pages (a login form taking any of the accounts' logins, then a consent form).
//
// What the tests need beside a plain provider, each on loopback only:
// - PUT /__test/accounts/<login> with a JSON body replaces that account's claims (a group change between
//   two logins, made at the provider as an administrator would);
// - an account's "tamper" mode changes the ID token the token endpoint hands out for it, so the relying
//   party's checks meet a token that is wrong in one way: "signature" (the payload changed after signing),
//   or re-signed with the provider's own key and "expired" (an hour ago), "nonce" (another login's),
//   "audience" (another client) or "issuer" (another provider).
import { createServer } from 'node:http';

import * as jose from 'jose';
import Provider from 'oidc-provider';

const config = JSON.parse(process.argv[2]);
const issuer = `http://127.0.0.1:${config.port}`;
const accounts = config.accounts;

const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
const signingKey = { ...(await jose.exportJWK(privateKey)), kid: 'assay-test', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: [
    {
      ...config.client,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [signingKey] },
  cookies: { keys: ['assay-test-cookie-key'] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name', 'preferred_username'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  async findAccount(ctx, id) {
    if (!Object.hasOwn(accounts, id)) return undefined;
    return {
      accountId: id,
      async claims() {
        const { tamper, ...claims } = accounts[id];
        return { sub: id, preferred_username: id, email_verified: true, ...claims };
      },
    };
  },
});

async function tampered(idToken, mode) {
  const claims = jose.decodeJwt(idToken);
  if (mode === 'signature') {
    const [header, , signature] = idToken.split('.');
    const forged = Buffer.from(JSON.stringify({ ...claims, groups: ['assay-admins'] })).toString('base64url');
    return `${header}.${forged}.${signature}`;
  }
  const now = Math.floor(Date.now() / 1000);
  const changes = {
    expired: { iat: now - 3600, exp: now - 1800 },
    nonce: { nonce: 'a-nonce-of-another-login' },
    audience: { aud: 'another-client' },
    issuer: { iss: 'http://127.0.0.1:9/another-provider' },
  }[mode];
  return new jose.SignJWT({ ...claims, ...changes })
    .setProtectedHeader({ alg: 'RS256', kid: signingKey.kid })
    .sign(privateKey);
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

provider.use(async (ctx, next) => {
  const change = ctx.path.match(/^\/__test\/accounts\/([^/]+)$/);
  if (change && ctx.method === 'PUT') {
    accounts[decodeURIComponent(change[1])] = await readJson(ctx.req);
    ctx.status = 204;
    return;
  }
  await next();
  if (ctx.path === '/token' && ctx.status === 200 && ctx.body?.id_token) {
    const mode = accounts[jose.decodeJwt(ctx.body.id_token).sub]?.tamper;
    if (mode) ctx.body = { ...ctx.body, id_token: await tampered(ctx.body.id_token, mode) };
  }
});

createServer(provider.callback()).listen(config.port, '127.0.0.1', () => {
  console.log(`listening on ${issuer}`);
});
