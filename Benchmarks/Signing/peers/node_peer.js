// The Node peer of Benchmarks/Signing/compare.sh: POST /v1/offers/sign as Apple's Node.js sample does it (a fresh UUID
// nonce, a Unix-ms timestamp, the seven fields joined by U+2063, ECDSA P-256/SHA-256 signed and then verified
// with the public key before replying), on node's own http and crypto only, so it needs no npm install.
// One worker process per core through node:cluster, as a Node service would be deployed.
// Env: KEY_FILE (PKCS#8 PEM), KEY_ID, BUNDLE_ID, PORT, WORKERS (default: one per core).
'use strict';
const cluster = require('node:cluster');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');

const SEP = '\u2063';
const FIELDS = ['productIdentifier', 'offerIdentifier', 'applicationUsername'];

if (cluster.isPrimary) {
  const workers = Number(process.env.WORKERS) || os.availableParallelism();
  for (let i = 0; i < workers; i++) cluster.fork();
} else {
  const { KEY_FILE, KEY_ID, BUNDLE_ID, PORT } = process.env;
  const privateKey = crypto.createPrivateKey(fs.readFileSync(KEY_FILE, 'utf8'));
  const publicKey = crypto.createPublicKey(privateKey);

  const reply = (res, status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const sign = (req, res, text) => {
    let body;
    try { body = JSON.parse(text); } catch { return reply(res, 400, { error: { code: 'malformed_json' } }); }
    if (body === null || typeof body !== 'object') return reply(res, 400, { error: { code: 'malformed_json' } });
    for (const field of FIELDS) {
      const value = body[field];
      if (typeof value !== 'string' || value === '' || value.includes(SEP))
        return reply(res, 400, { error: { code: 'invalid_request', field } });
    }
    const applicationUsername = body.applicationUsername.toLowerCase();
    const nonce = crypto.randomUUID();
    const timestamp = Date.now();
    const payload = Buffer.from([BUNDLE_ID, KEY_ID, body.productIdentifier, body.offerIdentifier,
      applicationUsername, nonce, timestamp].join(SEP), 'utf8');
    const signature = crypto.sign('sha256', payload, privateKey);
    if (!crypto.verify('sha256', payload, publicKey, signature))
      return reply(res, 500, { error: { code: 'internal' } });
    reply(res, 200, {
      format: 'legacy', bundleIdentifier: BUNDLE_ID, keyIdentifier: KEY_ID,
      productIdentifier: body.productIdentifier, offerIdentifier: body.offerIdentifier,
      applicationUsername, nonce, timestamp, signature: signature.toString('base64'),
    });
  };

  http.createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/offers/sign') return reply(res, 404, { error: { code: 'not_found' } });
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => sign(req, res, Buffer.concat(chunks).toString('utf8')));
  }).listen(Number(PORT), '127.0.0.1');
}
