/// The OpenAPI description of the HTTP API, served at `GET /openapi.yaml` (DESIGN.md §2.3).
enum OpenAPIDocument {
    static let yaml = """
    openapi: 3.1.0
    info:
      title: OfferSigner
      version: "1"
      description: Signs App Store promotional offers. Every error is {"error":{"code","message",...}}.
    paths:
      /v1/offers/sign:
        post:
          summary: Sign a promotional offer (legacy bundle or StoreKit 2 JWS) after the eligibility policy
          requestBody:
            required: true
            content:
              application/json:
                schema: { $ref: "#/components/schemas/SignRequest" }
          responses:
            "200": { description: "A legacy bundle or a JWS, recorded in the issued-signature log" }
            "400": { $ref: "#/components/responses/Error" }
            "403": { $ref: "#/components/responses/Error" }
            "404": { $ref: "#/components/responses/Error" }
            "413": { $ref: "#/components/responses/Error" }
            "503": { $ref: "#/components/responses/Error" }
      /v1/offers/eligibility:
        post:
          summary: Every offer of the policy with its decision for a customer
          requestBody:
            required: true
            content:
              application/json:
                schema:
                  type: object
                  required: [applicationUsername]
                  properties:
                    bundleIdentifier: { type: string }
                    applicationUsername: { type: string }
                    productIdentifier: { type: string }
          responses:
            "200": { description: "{applicationUsername, policyInForce, offers: [{productIdentifier, offerIdentifier, eligible, reasons}]}" }
            "400": { $ref: "#/components/responses/Error" }
            "404": { $ref: "#/components/responses/Error" }
      /v1/offers/introductory-eligibility:
        post:
          summary: An introductory-offer eligibility JWS, decided by the product's introductory-offer policy
          requestBody:
            required: true
            content:
              application/json:
                schema:
                  type: object
                  required: [productIdentifier, transactionId, applicationUsername]
                  properties:
                    bundleIdentifier: { type: string }
                    productIdentifier: { type: string }
                    transactionId: { type: string, pattern: "^[0-9]{1,64}$" }
                    applicationUsername: { type: string }
          responses:
            "200": { description: "{format: jws, allowIntroductoryOffer, reason, keyIdentifier, nonce, signature}" }
            "400": { $ref: "#/components/responses/Error" }
            "503": { $ref: "#/components/responses/Error" }
      /v1/offers/verify:
        post:
          summary: Verify a legacy bundle or {"signature":<compact JWS>}, showing what was checked
          requestBody:
            required: true
            content:
              application/json:
                schema: { type: object }
          responses:
            "200": { description: "{format, valid, reason?, keyIdentifier, keyState, payload | header+claims, validityWindow, warnings}" }
            "400": { $ref: "#/components/responses/Error" }
      /v1/notifications/appstore:
        post:
          summary: App Store Server Notifications V2
          requestBody:
            required: true
            content:
              application/json:
                schema:
                  type: object
                  required: [signedPayload]
                  properties:
                    signedPayload: { type: string }
          responses:
            "200": { description: "{outcome: processed | duplicate | ignored}" }
            "400": { $ref: "#/components/responses/Error" }
            "503": { $ref: "#/components/responses/Error" }
      /v1/keys:
        get:
          summary: Public keys with their states
          responses:
            "200": { description: "[{keyIdentifier, state, fingerprint, publicKeyPEM}]" }
      /.well-known/jwks.json:
        get:
          summary: The keys that are not revoked, as a JWK Set
          responses:
            "200": { description: "{keys: [JWK]}" }
      /admin/keys:
        get:
          summary: Keys with state, fingerprint, source, loadedAt, signaturesIssued
          security: [{ admin: [] }]
          responses:
            "200": { description: "{activeKeyIdentifier, keys}" }
            "401": { $ref: "#/components/responses/Error" }
            "403": { $ref: "#/components/responses/Error" }
      /admin/keys/reload:
        post:
          summary: Re-read the key sources, all or nothing
          security: [{ admin: [] }]
          responses:
            "200": { description: The new key list }
            "422": { $ref: "#/components/responses/Error" }
      /admin/keys/{keyIdentifier}/{action}:
        post:
          summary: activate, retire or revoke a key
          security: [{ admin: [] }]
          parameters:
            - { name: keyIdentifier, in: path, required: true, schema: { type: string } }
            - { name: action, in: path, required: true, schema: { type: string, enum: [activate, retire, revoke] } }
          responses:
            "200": { description: The new key list }
            "404": { $ref: "#/components/responses/Error" }
            "409": { $ref: "#/components/responses/Error" }
      /admin/customers/{bundleIdentifier}/{applicationUsername}:
        get:
          summary: The facts the rules see
          security: [{ admin: [] }]
          parameters:
            - { name: bundleIdentifier, in: path, required: true, schema: { type: string } }
            - { name: applicationUsername, in: path, required: true, schema: { type: string } }
          responses:
            "200": { description: "{known, facts}" }
      /admin/customers/{bundleIdentifier}/{applicationUsername}/flags:
        post:
          summary: Set or remove (null) flags
          security: [{ admin: [] }]
          parameters:
            - { name: bundleIdentifier, in: path, required: true, schema: { type: string } }
            - { name: applicationUsername, in: path, required: true, schema: { type: string } }
          responses:
            "200": { description: "{known, facts}" }
      /admin/customers/{bundleIdentifier}/{applicationUsername}/grants:
        post:
          summary: Grant a customer-service offer (expires, used once)
          security: [{ admin: [] }]
          parameters:
            - { name: bundleIdentifier, in: path, required: true, schema: { type: string } }
            - { name: applicationUsername, in: path, required: true, schema: { type: string } }
          responses:
            "200": { description: "{known, facts}" }
      /admin/signatures:
        get:
          summary: Query the issued-signature log (bundleIdentifier, applicationUsername, productIdentifier, offerIdentifier, keyIdentifier, since, until, limit)
          security: [{ admin: [] }]
          responses:
            "200": { description: "{signatures}" }
      /admin/audit:
        get:
          summary: Admin actions, newest first
          security: [{ admin: [] }]
          responses:
            "200": { description: "{events}" }
      /healthz:
        get:
          summary: The process is up
          responses:
            "200": { description: "{status: ok}" }
      /readyz:
        get:
          summary: A signing key is usable and the store answers
          responses:
            "200": { description: "{status: ready, activeKeyIdentifier}" }
            "503": { $ref: "#/components/responses/Error" }
      /metrics:
        get:
          summary: Prometheus metrics
          responses:
            "200": { description: Prometheus text format }
      /openapi.yaml:
        get:
          summary: This document
          responses:
            "200": { description: OpenAPI 3.1 YAML }
    components:
      securitySchemes:
        admin: { type: http, scheme: bearer }
      responses:
        Error:
          description: The one error shape
          content:
            application/json:
              schema:
                type: object
                properties:
                  error:
                    type: object
                    required: [code, message]
                    properties:
                      code: { type: string }
                      message: { type: string }
                      field: { type: string }
                      reasons:
                        type: array
                        items:
                          type: object
                          properties: { rule: { type: string }, code: { type: string }, message: { type: string } }
      schemas:
        SignRequest:
          type: object
          required: [productIdentifier, offerIdentifier, applicationUsername]
          properties:
            bundleIdentifier: { type: string, maxLength: 155 }
            productIdentifier: { type: string, maxLength: 255 }
            offerIdentifier: { type: string, maxLength: 255 }
            applicationUsername: { type: string, maxLength: 255 }
            format: { type: string, enum: [legacy, jws] }
            transactionId: { type: string }
            signedTransaction: { type: string }

    """
}
