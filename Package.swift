import Foundation
// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "offer-signer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "offer-signer", targets: ["offer-signer"]),
        .library(name: "OfferSigning", targets: ["OfferSigning"]),
        .library(name: "OfferApplication", targets: ["OfferApplication"]),
        .library(name: "OfferSignerServer", targets: ["OfferSignerServer"]),
        .library(name: "AppStoreNotifications", targets: ["AppStoreNotifications"]),
        .library(name: "AppStoreServerAPI", targets: ["AppStoreServerAPI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/vapor/sql-kit", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit", from: "4.5.2"),
        .package(url: "https://github.com/vapor/postgres-kit", from: "2.17.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // OpenTelemetry traces (docs/observability.md): the OTLP/HTTP exporter only, no gRPC.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // The one error shape every library shares: a coded error and its codes. No dependencies.
        .target(
            name: "OfferErrors",
            swiftSettings: swiftSettings
        ),
        // Formats, keys, key ring, sign + self-verify. No HTTP, no I/O.
        .target(
            name: "OfferSigning",
            dependencies: [
                "OfferErrors",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings
        ),
        // Key management: the key states admins set (versioned, compare-and-set), all-or-nothing reloads, the
        // ring the signing path reads, and what triggers a reload (SIGHUP, a watched folder, other replicas).
        .target(
            name: "OfferKeys",
            dependencies: [
                "OfferErrors",
                "OfferSigning",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // App Store signed data (notifications V2, transactions, renewal info): verification, decoding, and
        // folding into customer facts.
        .target(
            name: "AppStoreNotifications",
            dependencies: [
                "OfferErrors",
                "OfferModel",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        // The App Store Server API as a source of facts: Get All Subscription Statuses and Get Transaction History,
        // authenticated with the In-App Purchase key, every signed item verified like a notification. No server
        // types, no database.
        .target(
            name: "AppStoreServerAPI",
            dependencies: [
                "OfferErrors",
                "AppStoreNotifications",
                "OfferModel",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test chains and signed App Store payloads, for the tests of every target and the chain `serve --demo`
        // signs with (in no library product; the executable links it for the demo).
        .target(
            name: "AppStoreTestSupport",
            dependencies: [
                "AppStoreNotifications",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings
        ),
        // A local fake of Apple's App Store Server API on loopback, for the tests of the client and of the server that
        // calls it (in no product).
        .target(
            name: "AppStoreServerAPITestSupport",
            dependencies: [
                "AppStoreNotifications",
                "AppStoreTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The value types rules, stores and App Store folding share: customers, their facts, issued signatures.
        // No dependencies, so that the rules link no database driver.
        .target(
            name: "OfferModel",
            swiftSettings: swiftSettings
        ),
        // The statistics of offer experiments: sticky assignment by hash, always-valid intervals, sample sizes, the
        // sample-ratio check. OfferErrors and swift-crypto's SHA-256 only; no HTTP, no I/O.
        .target(
            name: "OfferExperiments",
            dependencies: ["OfferErrors", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // Customer facts and the issued-signature log: SQLite (embedded) and PostgreSQL.
        .target(
            name: "OfferStore",
            dependencies: [
                "OfferErrors",
                "OfferModel",
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "PostgresKit", package: "postgres-kit"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Eligibility: the rule protocol, built-in rules, combinators, the offer catalogue and policy file.
        .target(
            name: "OfferEligibility",
            dependencies: [
                "OfferExperiments",
                "OfferErrors",
                "OfferModel",
                "OfferSigning",
                // SHA-256 of the policy text: the policy's version in the decision log (issue 28).
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings
        ),
        // The application, apart from HTTP: the offer service, the signing pipeline and its flows, App Store facts,
        // retention, notification ingestion, their request and result types and their coded errors. No Hummingbird,
        // HTTP types or NIO HTTP here: the server adapts it to HTTP, tests and the CLI call it directly.
        .target(
            name: "OfferApplication",
            dependencies: [
                "OfferExperiments",
                "OfferErrors",
                "AppStoreNotifications",
                "AppStoreServerAPI",
                "OfferSigning",
                "OfferKeys",
                "OfferModel",
                "OfferEligibility",
                "OfferStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // The HTTP adapter: routes, middleware, credentials, rate limits, connections, configuration, the OpenAPI
        // document; maps the application's errors to HTTP in one place.
        .target(
            name: "OfferSignerServer",
            dependencies: [
                "OfferErrors",
                "OfferApplication",
                "AppStoreNotifications",
                "AppStoreServerAPI",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                "OfferSigning",
                "OfferKeys",
                "OfferModel",
                "OfferEligibility",
                "OfferStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ],
            // The OpenAPI document, served as the file holds it. A build puts it in the folder
            // offer-signer_OfferSignerServer.resources beside the binary; an installation copies both.
            resources: [.copy("OpenAPI/openapi.yaml")],
            swiftSettings: swiftSettings
        ),
        // `serve --demo`: the demo app, its policy, customers and stand-in App Store (the test-support chain), its
        // `/demo/*` routes — added to the server through `ServiceAddOn`, as any embedder's would be.
        .target(
            name: "OfferSignerDemo",
            dependencies: [
                "OfferSignerServer",
                "OfferApplication",
                "AppStoreTestSupport",
                "AppStoreNotifications",
                "OfferSigning",
                "OfferKeys",
                "OfferModel",
                "OfferEligibility",
                "OfferStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: swiftSettings
        ),
        // The executable: serve, sign, verify, keys. (AppStoreTestSupport: the chain `serve --demo` signs
        // its App Store data with.)
        .executableTarget(
            name: "offer-signer",
            dependencies: [
                "OfferSignerDemo",
                "OfferKeys",
                "OfferErrors",
                "AppStoreTestSupport",
                "AppStoreNotifications",
                "AppStoreServerAPI",
                "OfferModel",
                "OfferSigning",
                "OfferEligibility",
                "OfferStore",
                "OfferApplication",
                "OfferSignerServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OfferSigningTests",
            dependencies: [
                "OfferSigning",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OfferStoreTests",
            dependencies: [
                "OfferStore", .product(name: "Logging", package: "swift-log"), .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The application's use cases over in-memory fakes of the store capabilities they take, and the stand-in of
        // Apple's API where a use case calls it (the SQL stores' behaviour is OfferStoreTests'; HTTP is
        // OfferSignerServerTests').
        .testTarget(
            name: "OfferApplicationTests",
            dependencies: [
                "AppStoreNotifications",
                "AppStoreServerAPI",
                "AppStoreServerAPITestSupport",
                "OfferApplication",
                "OfferEligibility",
                "OfferKeys",
                "OfferModel",
                "OfferSigning",
                "OfferStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OfferExperimentsTests",
            dependencies: ["OfferExperiments"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OfferEligibilityTests",
            dependencies: ["OfferEligibility", "OfferModel", "OfferSigning"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AppStoreNotificationsTests",
            dependencies: [
                "AppStoreNotifications",
                "AppStoreTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AppStoreServerAPITests",
            dependencies: [
                "AppStoreServerAPI",
                "AppStoreServerAPITestSupport",
                "AppStoreNotifications",
                "AppStoreTestSupport",
                "OfferModel",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OfferSignerServerTests",
            dependencies: [
                "OfferSignerDemo",
                "OfferErrors",
                "AppStoreNotifications",
                "AppStoreServerAPI",
                "AppStoreServerAPITestSupport",
                "AppStoreTestSupport",
                "OfferSigning",
                "OfferKeys",
                "OfferModel",
                "OfferEligibility",
                "OfferStore",
                "OfferApplication",
                "OfferSignerServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)

// Benchmarks stay out of the default build (as Hummingbird does): set OFFER_SIGNER_BENCHMARKS=1 to add them,
// then run `OFFER_SIGNER_BENCHMARKS=1 swift package benchmark`.
if ProcessInfo.processInfo.environment["OFFER_SIGNER_BENCHMARKS"] != nil {
    package.dependencies.append(
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"])
    )
    package.targets.append(
        .executableTarget(
            name: "SignBenchmarks",
            dependencies: [
                "OfferSigning",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/SignBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    )
}

// Fuzz targets (libFuzzer) stay out of the default build: set OFFER_SIGNER_FUZZ=1 to add them, then build with
// the sanitizer as IntegrationTests/fuzz.sh does (docs/fuzzing.md).
if ProcessInfo.processInfo.environment["OFFER_SIGNER_FUZZ"] != nil {
    package.products.append(.executable(name: "offer-signer-fuzz", targets: ["offer-signer-fuzz"]))
    package.targets.append(
        .executableTarget(
            name: "offer-signer-fuzz",
            dependencies: [
                "OfferSigning",
                "OfferEligibility",
                "OfferApplication",
                "OfferSignerServer",
                "AppStoreNotifications",
                "AppStoreTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Fuzz/OfferSignerFuzz",
            swiftSettings: swiftSettings + [.enableExperimentalFeature("Extern")]
        )
    )
}
