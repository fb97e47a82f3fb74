/// The OpenAPI description of the HTTP API, served at `GET /openapi.yaml` (docs/design.md §2.3).
///
/// Precise enough for a schema-driven fuzzer (scripts/schema-check.sh runs schemathesis against it): every
/// request body with its fields, types, required lists and bounds, every response status a route can return,
/// and the response bodies. What a schema cannot say (control and format characters refused, lengths checked
/// after lower-casing) is said in the descriptions. Keep it in step with the routes: docs/fuzzing.md.
enum OpenAPIDocument {
    /// An operation's `responses:` entries that refer to shared response components, one per line at the
    /// document's indentation of such an entry: what many operations list alike, written once.
    private static func sharedResponses(_ entries: KeyValuePairs<String, String>) -> String {
        entries.map { status, component in ##""\##(status)": { $ref: "#/components/responses/\##(component)" }"## }
            .joined(separator: "\n" + String(repeating: " ", count: 8))
    }

    /// What every operation with a JSON body can answer besides its own: too large, not JSON, and the server's 500 and 503.
    private static let jsonBodyFailures = sharedResponses([
        "413": "PayloadTooLarge", "415": "UnsupportedMediaType", "500": "InternalError", "503": "ServiceUnavailable",
    ])

    /// What every admin operation can answer besides its own: no or an unknown token, a token without the right,
    /// throttled, and the server's 500 and 503.
    private static let adminFailures = sharedResponses([
        "401": "Unauthorized", "403": "Forbidden", "429": "RateLimited", "500": "InternalError", "503": "ServiceUnavailable",
    ])

    /// What every other operation can answer besides its own: the server's 500 and 503.
    private static let serverFailures = sharedResponses(["500": "InternalError", "503": "ServiceUnavailable"])

    static let yaml = #"""
    openapi: 3.1.0
    info:
      title: OfferSigner
      version: "1"
      description: >-
        Signs App Store promotional offers (legacy bundles and StoreKit 2 JWS), decides eligibility from a policy,
        ingests App Store Server Notifications V2, and manages keys through a bearer-token admin API. Request bodies
        are JSON (Content-Type: application/json, else 415), at most 65536 bytes (else 413), strict RFC 8259 (no
        trailing comma, invalid escape, unpaired surrogate, raw control character or invalid UTF-8; at most 64
        levels deep; else 400 malformed_json); a JSON object that names a key twice at any depth is refused (400
        duplicate_key). A customer identifier must be in Unicode NFC (else 400 invalid_request). Unknown fields are ignored. Every error is
        {"error":{"code","message","field"?,"reasons"?}}. No field may contain U+2063, a control character or an
        invisible format or separator character (Unicode Cf, Zl, Zp): 400 invalid_request naming the field.
        Optional fields may be sent as null, which means absent.
    paths:
      /v1/offers/sign:
        post:
          operationId: signOffer
          security: [{ client: [] }, {}]
          summary: Sign a promotional offer (legacy bundle or StoreKit 2 JWS) after the eligibility policy
          description: >-
            With a policy, the app, product and offer must be listed (else 404) and the offer's rules must hold
            (else 403 not_eligible with reasons). The signature is recorded before it is returned (else 503
            store_unavailable). With "format":"jws", transactionId (when given) is 1-64 decimal digits. When the App
            Store Server API is configured and the store knows no subscription of the customer (in the offer's group),
            a transactionId (or a signedTransaction's original transaction) is looked up at Apple first and the
            facts are stored: 403 customer_mismatch when Apple's answer carries another customer's appAccountToken,
            409 transaction_claimed when another customer already owns the subscription, 503 app_store_unavailable
            (with Retry-After) when Apple cannot be asked in time and the policy's appStoreUnavailable is refuse.
          requestBody:
            required: true
            content:
              application/json:
                schema: { $ref: "#/components/schemas/SignRequest" }
          responses:
            "200":
              description: A legacy bundle or a JWS, recorded in the issued-signature log
              content:
                application/json:
                  schema:
                    oneOf:
                      - $ref: "#/components/schemas/LegacyBundle"
                      - $ref: "#/components/schemas/SignedJWSOffer"
            "400": { $ref: "#/components/responses/BadRequest" }
            "401": { $ref: "#/components/responses/Unauthorized" }
            "409": { $ref: "#/components/responses/KeyStateConflict" }
            "429": { $ref: "#/components/responses/RateLimited" }
            "403": { $ref: "#/components/responses/NotEligible" }
            "404": { $ref: "#/components/responses/NotFound" }
            \#(jsonBodyFailures)
      /v1/offers/eligibility:
        post:
          operationId: offerEligibility
          security: [{ client: [] }, {}]
          summary: Every offer of the policy (of the product, when given) with its decision for a customer
          description: >-
            With transactionId and the App Store Server API configured, a customer the store knows no subscription of
            is looked up at Apple first, as for signing (403 customer_mismatch, 409 transaction_claimed, 503
            app_store_unavailable).
          requestBody:
            required: true
            content:
              application/json:
                schema: { $ref: "#/components/schemas/EligibilityRequest" }
          responses:
            "200":
              description: The decisions
              content:
                application/json:
                  schema: { $ref: "#/components/schemas/EligibilityResponse" }
            "400": { $ref: "#/components/responses/BadRequest" }
            "401": { $ref: "#/components/responses/Unauthorized" }
            "403": { $ref: "#/components/responses/Forbidden" }
            "409": { $ref: "#/components/responses/TransactionClaimed" }
            "429": { $ref: "#/components/responses/RateLimited" }
            "404": { $ref: "#/components/responses/NotFound" }
            \#(jsonBodyFailures)
      /v1/offers/introductory-eligibility:
        post:
          operationId: introductoryEligibility
          security: [{ client: [] }, {}]
          summary: An introductory-offer eligibility JWS, decided by the product's introductory-offer policy
          requestBody:
            required: true
            content:
              application/json:
                schema: { $ref: "#/components/schemas/IntroductoryEligibilityRequest" }
          responses:
            "200":
              description: The signed decision, recorded in the issued-signature log
              content:
                application/json:
                  schema: { $ref: "#/components/schemas/IntroductoryEligibilityResponse" }
            "400": { $ref: "#/components/responses/BadRequest" }
            "401": { $ref: "#/components/responses/Unauthorized" }
            "403": { $ref: "#/components/responses/Forbidden" }
            "409": { $ref: "#/components/responses/TransactionClaimed" }
            "429": { $ref: "#/components/responses/RateLimited" }
            "404": { $ref: "#/components/responses/NotFound" }
            \#(jsonBodyFailures)
      /v1/offers/verify:
        post:
          operationId: verifyOffer
          security: [{ client: [] }, {}]
          summary: Verify a legacy bundle or {"signature":<compact JWS>}, showing what was checked
          description: >-
            A body without keyIdentifier, nonce and timestamp whose signature contains "." is a JWS; any other body
            is a legacy bundle, and a missing field or a timestamp out of range is a 400. A bundle or token that
            does not verify (too long a field, an unknown or revoked key, a bad signature, a malformed token) is a
            200 with "valid":false and the reason.
          requestBody:
            required: true
            content:
              application/json:
                schema:
                  oneOf:
                    - $ref: "#/components/schemas/VerifyLegacyRequest"
                    - $ref: "#/components/schemas/VerifyJWSRequest"
          responses:
            "200":
              description: What was checked, and whether it holds
              content:
                application/json:
                  schema:
                    oneOf:
                      - $ref: "#/components/schemas/LegacyVerification"
                      - $ref: "#/components/schemas/JWSVerification"
            "400": { $ref: "#/components/responses/BadRequest" }
            "401": { $ref: "#/components/responses/Unauthorized" }
            "429": { $ref: "#/components/responses/RateLimited" }
            "413": { $ref: "#/components/responses/PayloadTooLarge" }
            "415": { $ref: "#/components/responses/UnsupportedMediaType" }
            "500": { $ref: "#/components/responses/InternalError" }
      /v1/notifications/appstore:
        post:
          operationId: appStoreNotification
          summary: App Store Server Notifications V2
          description: >-
            A signedPayload that does not verify is a 400 invalid_signed_payload and changes nothing; without a
            store or an app that can verify notifications (appAppleId for Production), or when the store fails,
            503 store_unavailable (the App Store retries).
          requestBody:
            required: true
            content:
              application/json:
                schema:
                  type: object
                  required: [signedPayload]
                  properties:
                    signedPayload: { type: string, description: "A compact JWS signed by the App Store (x5c chain)" }
          responses:
            "200":
              description: What became of the notification
              content:
                application/json:
                  schema:
                    type: object
                    required: [outcome]
                    properties:
                      outcome: { type: string, enum: [processed, stale, duplicate, ignored] }
            "400": { $ref: "#/components/responses/BadRequest" }
            "429": { $ref: "#/components/responses/RateLimited" }
            \#(jsonBodyFailures)
      /v1/retention/appstore:
        post:
          operationId: retentionMessage
          summary: Retention Messaging — answer the App Store's real-time Get Retention Message request
          description: >-
            The App Store calls this while a subscriber is about to cancel. The signedPayload is verified like a
            notification and must carry a served app's appAppleId (else 400 invalid_signed_payload). The product's
            retention entries in the policy are tried in order for the customer who owns originalTransactionId;
            the answer holds exactly one of message, alternateProduct or promotionalOffer (a V2 JWS whose
            transactionId is the originalTransactionId, or a V1 signature). The same requestIdentifier gets the
            same answer for the same original transaction and product; for another, 409
            request_identifier_conflict. A request signed outside the clock skew of now, or by a chain not valid
            now, is 400 invalid_signed_payload. 404 no_retention_answer when the policy has no answer for the product or customer;
            503 retention_timed_out when the deadline passed and there is no fallback message. Any non-200 makes
            the App Store show its default message.
          requestBody:
            required: true
            content:
              application/json:
                schema:
                  type: object
                  required: [signedPayload]
                  properties:
                    signedPayload: { type: string, description: "A compact JWS signed by the App Store (x5c chain)" }
          responses:
            "200":
              description: Apple's RealtimeResponseBody, exactly one field
              content:
                application/json:
                  schema:
                    type: object
                    minProperties: 1
                    maxProperties: 1
                    properties:
                      message:
                        type: object
                        required: [messageIdentifier]
                        properties:
                          messageIdentifier: { type: string }
                      alternateProduct:
                        type: object
                        required: [messageIdentifier, productId]
                        properties:
                          messageIdentifier: { type: string }
                          productId: { type: string }
                      promotionalOffer:
                        type: object
                        required: [messageIdentifier]
                        minProperties: 2
                        maxProperties: 2
                        properties:
                          messageIdentifier: { type: string }
                          promotionalOfferSignatureV2: { type: string, description: "Compact JWS (ES256)" }
                          promotionalOfferSignatureV1:
                            type: object
                            required: [encodedSignature, productId, nonce, timestamp, keyId, offerIdentifier]
                            properties:
                              encodedSignature: { type: string }
                              productId: { type: string }
                              nonce: { type: string, format: uuid }
                              timestamp: { type: integer, format: int64, description: "Unix milliseconds" }
                              keyId: { type: string }
                              offerIdentifier: { type: string }
                              appAccountToken: { type: string, format: uuid }
            "400": { $ref: "#/components/responses/BadRequest" }
            "404": { $ref: "#/components/responses/NotFound" }
            "409":
              description: request_identifier_conflict, the requestIdentifier was answered for another request
              content:
                application/json:
                  schema: { $ref: "#/components/schemas/ErrorEnvelope" }
            "429": { $ref: "#/components/responses/RateLimited" }
            \#(jsonBodyFailures)
      /demo/notifications:
        post:
          operationId: demoNotification
          tags: [demo]
          summary: "serve --demo only: a notification signed by the demo's App Store"
          description: >-
            Signs an App Store Server Notification V2 for a demo customer with the demo's own certificate chain
            (Sandbox). POST the answer to /v1/notifications/appstore, which verifies it like Apple's, to move the
            customer between cohorts. Only `serve --demo` registers this route.
          requestBody:
            required: true
            content:
              application/json:
                schema:
                  type: object
                  required: [applicationUsername, event]
                  properties:
                    applicationUsername: { type: string, description: "lapsed-user, leaving-user, loyal-user, new-user, or any name" }
                    event: { type: string, enum: [subscribe, renew, auto-renew-off, auto-renew-on, expire, refund] }
          responses:
            "200": { $ref: "#/components/responses/DemoSignedPayload" }
            "400": { $ref: "#/components/responses/BadRequest" }
            \#(jsonBodyFailures)
      /demo/retention:
        post:
          operationId: demoRetentionRequest
          tags: [demo]
          summary: "serve --demo only: a Retention Messaging request signed by the demo's App Store"
          description: >-
            Signs a real-time retention request for a demo customer's subscription; POST the answer to
            /v1/retention/appstore. Only `serve --demo` registers this route.
          requestBody:
            required: true
            content:
              application/json:
                schema:
                  type: object
                  required: [applicationUsername]
                  properties:
                    applicationUsername: { type: string }
          responses:
            "200": { $ref: "#/components/responses/DemoSignedPayload" }
            "400": { $ref: "#/components/responses/BadRequest" }
            \#(jsonBodyFailures)
      /v1/keys:
        get:
          operationId: publicKeys
          summary: Public keys with their states
          responses:
            "200":
              description: Every loaded key (public material only)
              content:
                application/json:
                  schema:
                    type: array
                    items:
                      type: object
                      required: [keyIdentifier, state, fingerprint, publicKeyPEM]
                      properties:
                        keyIdentifier: { $ref: "#/components/schemas/KeyIdentifier" }
                        state: { $ref: "#/components/schemas/KeyState" }
                        fingerprint: { $ref: "#/components/schemas/Fingerprint" }
                        publicKeyPEM: { type: string }
            "500": { $ref: "#/components/responses/InternalError" }
      /.well-known/jwks.json:
        get:
          operationId: jwks
          summary: The keys that are not revoked, as a JWK Set
          responses:
            "200":
              description: A JWK Set (RFC 7517)
              content:
                application/json:
                  schema:
                    type: object
                    required: [keys]
                    properties:
                      keys:
                        type: array
                        items:
                          type: object
                          required: [kty, crv, x, y, kid]
                          properties:
                            kty: { const: EC }
                            crv: { const: P-256 }
                            alg: { const: ES256 }
                            use: { const: sig }
                            kid: { type: string }
                            x: { type: string }
                            y: { type: string }
                          additionalProperties: { type: string }
            "500": { $ref: "#/components/responses/InternalError" }
      /admin/keys:
        get:
          operationId: adminListKeys
          summary: Keys with state, fingerprint, source, loadedAt and signatures issued
          security: [{ admin: [] }]
          responses:
            "200": { $ref: "#/components/responses/AdminKeyList" }
            "401": { $ref: "#/components/responses/Unauthorized" }
            "403": { $ref: "#/components/responses/Forbidden" }
            "429": { $ref: "#/components/responses/RateLimited" }
            "500": { $ref: "#/components/responses/InternalError" }
      /admin/keys/reload:
        post:
          operationId: adminReloadKeys
          summary: Re-read the key sources, all or nothing (no request body)
          security: [{ admin: [] }]
          responses:
            "200": { $ref: "#/components/responses/AdminKeyList" }
            "401": { $ref: "#/components/responses/Unauthorized" }
            "403": { $ref: "#/components/responses/Forbidden" }
            "422":
              description: key_reload_failed; the old key set keeps serving
              content:
                application/json:
                  schema: { $ref: "#/components/schemas/ErrorEnvelope" }
            "429": { $ref: "#/components/responses/RateLimited" }
            \#(serverFailures)
      /admin/keys/{keyIdentifier}/activate:
        post:
          operationId: adminActivateKey
          summary: Make a key the one that signs new offers (the previous one is retired; no request body)
          security: [{ admin: [] }]
          parameters:
            - $ref: "#/components/parameters/KeyIdentifier"
          responses: &keyActionResponses  # the same for activate, retire and revoke
            "200": { $ref: "#/components/responses/AdminKeyList" }
            "401": { $ref: "#/components/responses/Unauthorized" }
            "403": { $ref: "#/components/responses/Forbidden" }
            "404": { $ref: "#/components/responses/NotFound" }
            "409": { $ref: "#/components/responses/KeyStateConflict" }
            "429": { $ref: "#/components/responses/RateLimited" }
            \#(serverFailures)
      /admin/keys/{keyIdentifier}/retire:
        post:
          operationId: adminRetireKey
          summary: Stop a key signing new offers; its signatures still verify (no request body)
          security: [{ admin: [] }]
          parameters:
            - $ref: "#/components/parameters/KeyIdentifier"
          responses: *keyActionResponses
      /admin/keys/{keyIdentifier}/revoke:
        post:
          operationId: adminRevokeKey
          summary: Revoke a compromised key; it neither signs nor verifies (no request body)
          security: [{ admin: [] }]
          parameters:
            - $ref: "#/components/parameters/KeyIdentifier"
          responses: *keyActionResponses
      /admin/customers/{bundleIdentifier}/{applicationUsername}:
        get:
          operationId: adminCustomerFacts
          summary: The facts the eligibility rules see for a customer
          security: [{ admin: [] }]
          parameters:
            - $ref: "#/components/parameters/PathBundleIdentifier"
            - $ref: "#/components/parameters/PathApplicationUsername"
          responses:
            "200": { $ref: "#/components/responses/CustomerAnswer" }
            "400": { $ref: "#/components/responses/BadRequest" }
            \#(adminFailures)
      /admin/customers/{bundleIdentifier}/{applicationUsername}/flags:
        post:
          operationId: adminSetCustomerFlags
          summary: Set flags, or remove them with null
          security: [{ admin: [] }]
          parameters:
            - $ref: "#/components/parameters/PathBundleIdentifier"
            - $ref: "#/components/parameters/PathApplicationUsername"
          requestBody:
            required: true
            content:
              application/json:
                schema:
                  type: object
                  required: [flags]
                  examples:
                    - { flags: { churnRisk: high, vip: null } }
                  properties:
                    flags:
                      type: object
                      description: Flag name (1-64 characters) to value (at most 255 characters), or null to remove it
                      propertyNames: { minLength: 1, maxLength: 64 }
                      additionalProperties:
                        type: [string, "null"]
                        maxLength: 255
          responses:
            "200": { $ref: "#/components/responses/CustomerAnswer" }
            "400": { $ref: "#/components/responses/BadRequest" }
            "401": { $ref: "#/components/responses/Unauthorized" }
            "403": { $ref: "#/components/responses/Forbidden" }
            "413": { $ref: "#/components/responses/PayloadTooLarge" }
            "415": { $ref: "#/components/responses/UnsupportedMediaType" }
            "429": { $ref: "#/components/responses/RateLimited" }
            \#(serverFailures)
      /admin/customers/{bundleIdentifier}/{applicationUsername}/grants:
        post:
          operationId: adminGrantOffer
          summary: Grant a customer-service offer (it expires, and is used once)
          description: With a policy, the offer must be one the policy lists for the app (else 404 unknown_offer).
          security: [{ admin: [] }]
          parameters:
            - $ref: "#/components/parameters/PathBundleIdentifier"
            - $ref: "#/components/parameters/PathApplicationUsername"
          requestBody:
            required: true
            content:
              application/json:
                schema:
                  type: object
                  required: [productIdentifier, offerIdentifier]
                  examples:
                    - { productIdentifier: com.example.monthly, offerIdentifier: winback_50, expiresInDays: 14 }
                  properties:
                    productIdentifier: { type: string }
                    offerIdentifier: { type: string }
                    expiresInDays:
                      type: [integer, "null"]
                      minimum: 1
                      maximum: 365
                      description: How long the grant can be used; default 14
          responses:
            "200": { $ref: "#/components/responses/CustomerAnswer" }
            "400": { $ref: "#/components/responses/BadRequest" }
            "401": { $ref: "#/components/responses/Unauthorized" }
            "403": { $ref: "#/components/responses/Forbidden" }
            "404": { $ref: "#/components/responses/NotFound" }
            "413": { $ref: "#/components/responses/PayloadTooLarge" }
            "415": { $ref: "#/components/responses/UnsupportedMediaType" }
            "429": { $ref: "#/components/responses/RateLimited" }
            \#(serverFailures)
      /admin/customers/{bundleIdentifier}/{applicationUsername}/refresh:
        post:
          operationId: adminRefreshCustomer
          summary: Ask the App Store Server API again about the customer's known subscriptions and store the facts
          description: >-
            For every original transaction the store knows of the customer, Apple's statuses and history are fetched
            (answers cached by the client within OFFER_SIGNER_APP_STORE_API_CACHE_TTL are reused), verified, folded
            into the customer's facts and stored; audited as customer.refresh. 404 unknown_transaction when the
            store knows no original transaction of the customer, 403 customer_mismatch when Apple's answer carries
            another customer's appAccountToken, 409 app_store_api_not_configured when the app has no App Store Server
            API key, 503 app_store_unavailable.
          security: [{ admin: [] }]
          parameters:
            - $ref: "#/components/parameters/PathBundleIdentifier"
            - $ref: "#/components/parameters/PathApplicationUsername"
          responses:
            "200": { $ref: "#/components/responses/CustomerAnswer" }
            "400": { $ref: "#/components/responses/BadRequest" }
            "401": { $ref: "#/components/responses/Unauthorized" }
            "403": { $ref: "#/components/responses/Forbidden" }
            "404": { $ref: "#/components/responses/NotFound" }
            "409": { $ref: "#/components/responses/RefreshConflict" }
            "429": { $ref: "#/components/responses/RateLimited" }
            \#(serverFailures)
      /admin/signatures:
        get:
          operationId: adminIssuedSignatures
          summary: Query the issued-signature log, newest first
          security: [{ admin: [] }]
          parameters:
            - { name: bundleIdentifier, in: query, required: false, schema: { type: string } }
            - { name: applicationUsername, in: query, required: false, schema: { type: string } }
            - { name: productIdentifier, in: query, required: false, schema: { type: string } }
            - { name: offerIdentifier, in: query, required: false, schema: { type: string } }
            - { name: keyIdentifier, in: query, required: false, schema: { type: string } }
            - name: since
              in: query
              required: false
              description: Unix milliseconds, inclusive
              schema: { type: integer, format: int64, minimum: -9223372036854775808, maximum: 9223372036854775807 }
            - name: until
              in: query
              required: false
              description: Unix milliseconds, exclusive
              schema: { type: integer, format: int64, minimum: -9223372036854775808, maximum: 9223372036854775807 }
            - name: limit
              in: query
              required: false
              description: At most this many (default 100)
              schema: { type: integer, minimum: 1, maximum: 10000 }
          responses:
            "200":
              description: The matching signatures
              content:
                application/json:
                  schema:
                    type: object
                    required: [signatures]
                    properties:
                      signatures:
                        type: array
                        items: { $ref: "#/components/schemas/IssuedSignature" }
            "400": { $ref: "#/components/responses/BadRequest" }
            \#(adminFailures)
      /admin/audit:
        get:
          operationId: adminAudit
          summary: Admin actions, newest first
          security: [{ admin: [] }]
          parameters:
            - name: limit
              in: query
              required: false
              description: At most this many, 1-10000 (default 100); anything else is a 400 naming limit
              schema: { type: integer, minimum: 1, maximum: 10000 }
          responses:
            "200":
              description: The events
              content:
                application/json:
                  schema:
                    type: object
                    required: [events]
                    properties:
                      events:
                        type: array
                        items: { $ref: "#/components/schemas/AuditEvent" }
            "400": { $ref: "#/components/responses/BadRequest" }
            \#(adminFailures)
      /healthz:
        get:
          operationId: healthz
          summary: The process is up
          responses:
            "200":
              description: Up
              content:
                application/json:
                  schema: { $ref: "#/components/schemas/Health" }
      /readyz:
        get:
          operationId: readyz
          summary: A signing key is usable and the store answers
          responses:
            "200":
              description: Ready
              content:
                application/json:
                  schema: { $ref: "#/components/schemas/Health" }
            \#(serverFailures)
      /metrics:
        get:
          operationId: metrics
          summary: Prometheus metrics
          responses:
            "200":
              description: Prometheus text exposition format 0.0.4
              content:
                text/plain:
                  schema: { type: string }
      /openapi.yaml:
        get:
          operationId: openapi
          summary: This document
          responses:
            "200":
              description: OpenAPI 3.1
              content:
                application/yaml:
                  schema: { type: object, required: [openapi, info, paths] }
    components:
      securitySchemes:
        client:
          type: http
          scheme: bearer
          description: >-
            /v1/offers/* take a client credential: an API key of OFFER_SIGNER_API_KEYS (a backend; it may name any
            customer), or the developer's login JWT (the app; it acts for the customer its customer claim names,
            and naming another is a 403 customer_mismatch). No credential, or a bad or expired one, is a 401 with
            WWW-Authenticate. Only the explicit open mode (OFFER_SIGNER_CLIENT_AUTH=none, serve --demo) takes none.
        admin:
          type: http
          scheme: bearer
          description: One of OFFER_SIGNER_ADMIN_TOKENS. Failed attempts are throttled per client address (429).
      parameters:
        KeyIdentifier:
          name: keyIdentifier
          in: path
          required: true
          description: A key identifier; one that is not loaded is a 404 unknown_key
          schema: { type: string, minLength: 1 }
        PathBundleIdentifier:
          name: bundleIdentifier
          in: path
          required: true
          description: The app, percent-encoded UTF-8, 1-155 characters once decoded
          schema: { type: string, minLength: 1, maxLength: 155, examples: [com.example.app] }
        PathApplicationUsername:
          name: applicationUsername
          in: path
          required: true
          description: The customer, percent-encoded UTF-8, 1-255 characters once decoded and lower-cased
          schema: { type: string, minLength: 1, maxLength: 255, examples: [user-0001] }
      headers:
        RetryAfter:
          description: Seconds to wait before trying again
          schema: { type: string, pattern: "^[0-9]+$" }
      responses:
        BadRequest:
          description: invalid_request (with field), malformed_json, duplicate_key, malformed_request, invalid_signed_payload
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        Unauthorized:
          description: unauthorized, no bearer token
          headers:
            WWW-Authenticate:
              required: true
              schema: { type: string }
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        Forbidden:
          description: forbidden, not an admin token (or no admin tokens configured)
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        NotEligible:
          description: not_eligible, with every reason; or customer_mismatch (the request names another customer than its credential or the App Store data)
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        DemoSignedPayload:
          description: The body to POST to the App Store endpoint
          content:
            application/json:
              schema:
                type: object
                required: [signedPayload]
                properties:
                  signedPayload: { type: string, description: "A compact JWS signed by the demo's App Store chain" }
        NotFound:
          description: unknown_app, unknown_product, unknown_offer, unknown_key, unknown_transaction, no_retention_answer
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        RefreshConflict:
          description: >-
            transaction_claimed (Apple's answer names a subscription another customer holds), or
            app_store_api_not_configured (the app has no App Store Server API key: OFFER_SIGNER_APP_STORE_API_KEY_ID)
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        TransactionClaimed:
          description: >-
            transaction_claimed: the subscription's original transaction is already another customer's, and neither
            the signed transaction nor the App Store's answer carries this customer's appAccountToken
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        KeyStateConflict:
          description: key_state_conflict (for example revoking or retiring the active key), or transaction_claimed
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        PayloadTooLarge:
          description: payload_too_large, a body over 65536 bytes
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        UnsupportedMediaType:
          description: unsupported_media_type, a body not sent as application/json
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        RateLimited:
          description: rate_limited, too many failed admin authentications from this address
          headers:
            Retry-After:
              required: true
              schema: { type: string, pattern: "^[0-9]+$" }
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        InternalError:
          description: internal or signature_self_check_failed (a bug; details are logged, never returned)
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        ServiceUnavailable:
          description: >-
            no_signing_key, issuer_not_configured, store_unavailable, app_store_unavailable (the App Store Server API
            could not be asked in time about a customer the store does not know, under appStoreUnavailable: refuse),
            retention_timed_out;
            each carries Retry-After
          headers:
            Retry-After:
              required: false
              schema: { type: string, pattern: "^[0-9]+$" }
          content:
            application/json:
              schema: { $ref: "#/components/schemas/ErrorEnvelope" }
        AdminKeyList:
          description: The keys after the action
          content:
            application/json:
              schema: { $ref: "#/components/schemas/AdminKeyList" }
        CustomerAnswer:
          description: What the store knows of the customer
          content:
            application/json:
              schema:
                type: object
                required: [known, facts]
                properties:
                  known: { type: boolean }
                  facts: { $ref: "#/components/schemas/CustomerFacts" }
      schemas:
        ErrorEnvelope:
          type: object
          required: [error]
          properties:
            error:
              type: object
              required: [code, message]
              properties:
                code: { type: string, pattern: "^[a-z_]+$" }
                message: { type: string }
                field: { type: string }
                reasons:
                  type: array
                  items: { $ref: "#/components/schemas/EligibilityReason" }
        EligibilityReason:
          type: object
          required: [rule, code, message]
          properties:
            rule: { type: string }
            code: { type: string }
            message: { type: string }
        KeyIdentifier:
          type: string
          pattern: "^[A-Za-z0-9_]{1,64}$"
        KeyState:
          type: string
          enum: [active, retired, revoked]
        Fingerprint:
          type: string
          pattern: "^[0-9a-f]{64}$"
        Nonce:
          type: string
          pattern: "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
        Timestamp:
          type: integer
          format: int64
          minimum: 0
          maximum: 253402300799999
          description: Unix time in milliseconds (up to the end of year 9999)
        SignRequest:
          type: object
          required: [productIdentifier, offerIdentifier]
          examples:
            - { productIdentifier: com.example.monthly, offerIdentifier: winback_50, applicationUsername: 8C1D6A9E-0B2F-4C3D-9E8F-1A2B3C4D5E6F }
            - { productIdentifier: com.example.monthly, offerIdentifier: winback_50, applicationUsername: user-0001, format: jws, transactionId: "2000000123456789" }
          properties:
            bundleIdentifier:
              type: [string, "null"]
              maxLength: 155
              description: Optional when one app is configured; another app is a 404 unknown_app
            productIdentifier: { type: string, minLength: 1, maxLength: 255 }
            offerIdentifier: { type: string, minLength: 1, maxLength: 255 }
            applicationUsername:
              type: string
              minLength: 1
              maxLength: 255
              description: >-
                Lower-cased before signing; the length is checked after lower-casing; U+0130 and U+03A3 are refused.
                Required with an API key or in the open mode (400 when missing); with a login JWT it may be left out
                (the token's customer is used) and must otherwise be that customer (403 customer_mismatch).
            format:
              type: [string, "null"]
              enum: [legacy, jws, null]
              description: legacy (the default) or jws (StoreKit 2 promotional offer V2)
            transactionId:
              type: [string, "null"]
              description: >-
                For jws, a transaction of the customer's, 1-64 decimal digits, signed into the JWS. For both formats,
                with the App Store Server API configured, asked about when the store knows no subscription of the
                customer
            signedTransaction:
              type: [string, "null"]
              description: StoreKit 2 jwsRepresentation of one of the customer's transactions, verified like notifications (needs a store and a verifiable app, else 503)
        EligibilityRequest:
          type: object
          description: applicationUsername may be left out with a login JWT (its customer is used)
          examples:
            - { applicationUsername: user-0001, productIdentifier: com.example.monthly }
          properties:
            bundleIdentifier:
              type: [string, "null"]
              description: Optional when one app is configured; another app is a 404 unknown_app
            applicationUsername: { type: string, minLength: 1, maxLength: 255 }
            productIdentifier: { type: [string, "null"], description: "Only this product's offers" }
            transactionId:
              type: [string, "null"]
              description: >-
                A transaction of the customer's (decimal digits): when the store knows no subscription of theirs and
                the App Store Server API is configured, Apple is asked first
        IntroductoryEligibilityRequest:
          type: object
          required: [productIdentifier, transactionId]
          description: >-
            Decided for the customer who owns transactionId (an original transaction a notification or a verified
            signed transaction linked to them, or, with the App Store Server API configured, Apple's answer for it:
            an appAccountToken that is this customer's, or a subscription nobody has claimed): 404
            unknown_transaction when nothing links it, 403 customer_mismatch when another customer owns it, 409
            transaction_claimed, 503 app_store_unavailable. applicationUsername may be left out with a login JWT.
          examples:
            - { productIdentifier: com.example.monthly, transactionId: "2000000123456789", applicationUsername: user-0001 }
          properties:
            bundleIdentifier: { type: [string, "null"], maxLength: 155 }
            productIdentifier: { type: string, minLength: 1, maxLength: 255 }
            transactionId: { type: string, pattern: "^[0-9]{1,64}$" }
            applicationUsername: { type: string, minLength: 1, maxLength: 255 }
            signedTransaction:
              type: [string, "null"]
              description: StoreKit 2 jwsRepresentation of the customer's transaction, verified and recorded first (links transactionId to the customer)
        VerifyLegacyRequest:
          type: object
          description: The fields of a legacy bundle (what sign returned); bundleIdentifier is optional when one app is configured
          required: [productIdentifier, offerIdentifier, applicationUsername, keyIdentifier, nonce, timestamp, signature]
          properties:
            bundleIdentifier: { type: [string, "null"] }
            productIdentifier: { type: string }
            offerIdentifier: { type: string }
            applicationUsername: { type: string }
            keyIdentifier: { type: string }
            nonce: { type: string }
            timestamp: { $ref: "#/components/schemas/Timestamp" }
            signature: { type: string, description: "Base64 DER ECDSA signature" }
        VerifyJWSRequest:
          type: object
          required: [signature]
          properties:
            signature: { type: string, pattern: "\\.", description: "A compact JWS (header.claims.signature)" }
            bundleIdentifier: { type: [string, "null"] }
            productIdentifier: { type: [string, "null"] }
            offerIdentifier: { type: [string, "null"] }
            applicationUsername: { type: [string, "null"] }
            keyIdentifier: { type: "null" }
            nonce: { type: "null" }
            timestamp: { type: "null" }
        LegacyBundle:
          type: object
          required: [format, bundleIdentifier, productIdentifier, offerIdentifier, applicationUsername, keyIdentifier, nonce, timestamp, signature]
          properties:
            format: { const: legacy }
            bundleIdentifier: { type: string }
            productIdentifier: { type: string }
            offerIdentifier: { type: string }
            applicationUsername: { type: string, description: "Exactly as signed (lower-cased)" }
            keyIdentifier: { $ref: "#/components/schemas/KeyIdentifier" }
            nonce: { $ref: "#/components/schemas/Nonce" }
            timestamp: { $ref: "#/components/schemas/Timestamp" }
            signature: { type: string, contentEncoding: base64 }
        SignedJWSOffer:
          type: object
          required: [format, bundleIdentifier, productIdentifier, offerIdentifier, keyIdentifier, nonce, signature]
          properties:
            format: { const: jws }
            bundleIdentifier: { type: string }
            productIdentifier: { type: string }
            offerIdentifier: { type: string }
            keyIdentifier: { $ref: "#/components/schemas/KeyIdentifier" }
            nonce: { $ref: "#/components/schemas/Nonce" }
            signature: { type: string, pattern: "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$" }
        EligibilityResponse:
          type: object
          required: [applicationUsername, policyInForce, offers]
          properties:
            applicationUsername: { type: string }
            policyInForce: { type: boolean, description: "false without a policy: every offer is signed, none is listed" }
            offers:
              type: array
              items:
                type: object
                required: [productIdentifier, offerIdentifier, eligible, reasons]
                properties:
                  productIdentifier: { type: string }
                  offerIdentifier: { type: string }
                  eligible: { type: boolean }
                  reasons:
                    type: array
                    items: { $ref: "#/components/schemas/EligibilityReason" }
        IntroductoryEligibilityResponse:
          type: object
          required: [format, bundleIdentifier, productIdentifier, transactionId, allowIntroductoryOffer, reason, keyIdentifier, nonce, signature]
          properties:
            format: { const: jws }
            bundleIdentifier: { type: string }
            productIdentifier: { type: string }
            transactionId: { type: string }
            allowIntroductoryOffer: { type: boolean }
            reason: { type: string }
            keyIdentifier: { $ref: "#/components/schemas/KeyIdentifier" }
            nonce: { $ref: "#/components/schemas/Nonce" }
            signature: { type: string, pattern: "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$" }
        VerificationCommon:
          type: object
          required: [format, valid, warnings]
          properties:
            valid: { type: boolean }
            reason:
              type: string
              description: Why not (invalid_field, unknown_key, key_revoked, signature_mismatch, malformed_jws, unsupported_algorithm, wrong_audience, invalid_claims, …); absent when valid
            message: { type: string }
            keyState: { $ref: "#/components/schemas/KeyState" }
            validityWindow: { type: string, enum: [current, expired, future] }
            warnings: { type: array, items: { type: string } }
        LegacyVerification:
          allOf:
            - $ref: "#/components/schemas/VerificationCommon"
            - type: object
              required: [keyIdentifier, payload, validityWindow]
              properties:
                format: { const: legacy }
                keyIdentifier: { type: string }
                payload: { type: string, description: "The signed payload, U+2063 shown as \\u2063" }
        JWSVerification:
          allOf:
            - $ref: "#/components/schemas/VerificationCommon"
            - type: object
              properties:
                format: { const: jws }
                keyIdentifier: { type: string }
                header:
                  type: object
                  properties:
                    alg: { type: string }
                    kid: { type: string }
                    typ: { type: string }
                    x5c: { type: array, items: { type: string } }
                claims:
                  type: object
                  properties:
                    iss: { type: string }
                    bid: { type: string }
                    aud: { type: string }
                    iat: { type: number }
                    nonce: { type: string }
                    productId: { type: string }
                    offerIdentifier: { type: string }
                    transactionId: { type: string }
                    allowIntroductoryOffer: { type: boolean }
        AdminKeyList:
          type: object
          required: [keys]
          properties:
            activeKeyIdentifier: { $ref: "#/components/schemas/KeyIdentifier" }
            keys:
              type: array
              items:
                type: object
                required: [keyIdentifier, state, fingerprint, source, loadedAt, signaturesIssued]
                properties:
                  keyIdentifier: { $ref: "#/components/schemas/KeyIdentifier" }
                  state: { $ref: "#/components/schemas/KeyState" }
                  fingerprint: { $ref: "#/components/schemas/Fingerprint" }
                  source: { type: string }
                  loadedAt: { $ref: "#/components/schemas/UnixMilliseconds" }
                  signaturesIssued: { type: integer, minimum: 0 }
        UnixMilliseconds:
          type: integer
          format: int64
          description: Unix time in milliseconds (every timestamp in this API, as in Apple's APIs and the signature's timestamp)
        CustomerFacts:
          type: object
          required: [key, subscriptions, flags, grants, updatedAt]
          properties:
            key:
              type: object
              required: [bundleIdentifier, applicationUsername]
              properties:
                bundleIdentifier: { type: string }
                applicationUsername: { type: string }
            subscriptions:
              type: array
              items:
                type: object
                required: [subscriptionGroupIdentifier, productIdentifier, state, autoRenewEnabled, renewalCount, hadIntroductoryOffer, downgraded]
                properties:
                  subscriptionGroupIdentifier: { type: string }
                  productIdentifier: { type: string }
                  originalTransactionId: { type: string }
                  state: { type: string, enum: [active, expired, inBillingRetry, inGracePeriod, revoked] }
                  autoRenewEnabled: { type: boolean }
                  autoRenewProductIdentifier: { type: string }
                  expiresDate: { $ref: "#/components/schemas/UnixMilliseconds" }
                  originalPurchaseDate: { $ref: "#/components/schemas/UnixMilliseconds" }
                  renewalCount: { type: integer }
                  hadIntroductoryOffer: { type: boolean }
                  expirationIntent: { type: integer }
                  downgraded: { type: boolean }
                  lastSignedDate: { $ref: "#/components/schemas/UnixMilliseconds" }
            storefront: { type: string }
            flags:
              type: object
              additionalProperties: { type: string }
            grants:
              type: array
              items:
                type: object
                required: [id, productIdentifier, offerIdentifier, grantedBy, grantedAt, expiresAt]
                properties:
                  id: { type: string }
                  productIdentifier: { type: string }
                  offerIdentifier: { type: string }
                  grantedBy: { type: string }
                  grantedAt: { $ref: "#/components/schemas/UnixMilliseconds" }
                  expiresAt: { $ref: "#/components/schemas/UnixMilliseconds" }
                  usedAt: { $ref: "#/components/schemas/UnixMilliseconds" }
            updatedAt: { $ref: "#/components/schemas/UnixMilliseconds" }
        IssuedSignature:
          type: object
          required: [nonce, keyIdentifier, bundleIdentifier, productIdentifier, offerIdentifier, applicationUsername, timestamp, format]
          properties:
            nonce: { type: string }
            keyIdentifier: { type: string }
            bundleIdentifier: { type: string }
            productIdentifier: { type: string }
            offerIdentifier: { type: string, description: "Empty for introductory-offer eligibility" }
            applicationUsername: { type: string }
            timestamp: { $ref: "#/components/schemas/UnixMilliseconds" }
            format: { type: string, enum: [legacy, jws, introductory-eligibility] }
            channel: { type: string, enum: [api, retention], description: "Who asked: the app's backend (api) or the App Store's retention request" }
            requestIdentifier: { type: string, description: "The App Store's requestIdentifier (retention)" }
        AuditEvent:
          type: object
          required: [id, at, actor, action, target, details]
          properties:
            id: { type: string }
            at: { $ref: "#/components/schemas/UnixMilliseconds" }
            actor: { type: string }
            action: { type: string }
            target: { type: string }
            details:
              type: object
              additionalProperties: { type: string }
        Health:
          type: object
          required: [status]
          properties:
            status: { type: string, enum: [ok, ready] }
            activeKeyIdentifier: { $ref: "#/components/schemas/KeyIdentifier" }

    """#
}
