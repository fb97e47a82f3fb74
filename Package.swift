// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

// Branch `notifications`: only the App Store signed-data targets. The other targets of DESIGN.md §5 live on main;
// the `.package` lines and target entries below are merged into main's manifest by hand.
let package = Package(
    name: "offer-signer",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AppStoreNotifications", targets: ["AppStoreNotifications"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
    ],
    targets: [
        // Verification (x5c chain to a trusted root, Apple's marker OIDs, ES256) and decoding of App Store signed
        // data: Server Notifications V2, signed transactions, signed renewal info. No HTTP, no I/O.
        .target(
            name: "AppStoreNotifications",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test-only helpers: a root/intermediate/leaf chain built in code and a JWS signer. Not in any product.
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
    ]
)
