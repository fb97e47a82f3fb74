import Foundation
import OfferApplication
import OfferEligibility
import Testing

/// `policy check` of a retention catalogue (``RetentionCatalogueCheck``): one test per limit of Apple's Retention
/// Messaging API, on a policy file read from a folder with its image files beside it.
@Suite struct RetentionCatalogueCheckTests {
    @Test func aCatalogueWithinEveryLimitHasNoProblemAndStableIdentifiers() throws {
        let folder = try CatalogueFolder()
        try folder.write("hero.png", RetentionPNG.make(width: 3840, height: 2160))
        try folder.write("star.png", RetentionPNG.make(width: 1024, height: 1024))
        let messages = """
                  - name: keep-going
                    locale: en-US
                    header: "\(String(repeating: "h", count: 66))"
                    body: "\(String(repeating: "b", count: 144))"
                    headerPosition: ABOVE_IMAGE
                    image: hero.png
                    altText: "\(String(repeating: "a", count: 150))"
                    bulletPoints:
            \((1...5).map {
                "          - { text: \"\(String(repeating: "t", count: 66))\", image: star.png, altText: \"star \($0)\" }"
            }.joined(separator: "\n"))
                  - name: half-price
                    header: Half price
                    body: Stay for half price for three months.
            """
        let policy = try folder.policy(
            messages: messages,
            entries: """
                          - promotionalOffer: half_price
                            message: half-price
                            rules: [auto-renew-off]
                          - message: keep-going
                """,
            defaults: "en-US: keep-going"
        )
        #expect(RetentionCatalogueCheck.problems(in: policy).isEmpty)
        let catalogue = policy.apps[0].retentionCatalogue
        #expect(catalogue.messages.count == 2)
        #expect(catalogue.images.count == 2)  // the bullet image five times is one image
        #expect(catalogue.defaults.map(\.messageName) == ["keep-going"])
        let entries = policy.apps[0].products[0].retention
        #expect(entries.map(\.messageIdentifier) == [catalogue.messages[1].identifier, catalogue.messages[0].identifier])
        // The same content is the same identifier; another text another one.
        let again = try folder.policy(messages: messages, entries: "          - message: keep-going", defaults: nil)
        #expect(again.apps[0].retentionCatalogue.messages.map(\.identifier) == catalogue.messages.map(\.identifier))
        let changed = try folder.policy(
            messages: messages.replacingOccurrences(of: "Half price", with: "Half off"),
            entries: "          - message: keep-going",
            defaults: nil
        )
        #expect(changed.apps[0].retentionCatalogue.messages[1].identifier != catalogue.messages[1].identifier)
        #expect(changed.apps[0].retentionCatalogue.messages[0].identifier == catalogue.messages[0].identifier)
    }

    @Test func aHeaderOver66CharactersIsRefused() throws {
        #expect(try codes(text: "header: \"\(String(repeating: "h", count: 67))\"\n        body: b") == ["header_too_long"])
    }

    @Test func aBodyOver144CharactersIsRefused() throws {
        #expect(try codes(text: "header: h\n        body: \"\(String(repeating: "b", count: 145))\"") == ["body_too_long"])
    }

    @Test func anAltTextOver150CharactersIsRefused() throws {
        let folder = try CatalogueFolder()
        try folder.write("hero.png", RetentionPNG.make(width: 3840, height: 400))
        #expect(
            try folder.codes(
                """
                      - name: m
                        header: h
                        body: b
                        image: hero.png
                        altText: "\(String(repeating: "a", count: 151))"
                """
            ) == ["alt_text_too_long"]
        )
    }

    @Test func moreThanFiveBulletPointsAreRefused() throws {
        let folder = try CatalogueFolder()
        try folder.write("star.png", RetentionPNG.make(width: 1024, height: 1024))
        #expect(
            try folder.codes(
                """
                      - name: m
                        header: h
                        body: b
                        bulletPoints:
                \((1...6).map { "          - { text: \"point \($0)\", image: star.png, altText: star }" }.joined(separator: "\n"))
                """
            ) == ["too_many_bullet_points"]
        )
    }

    @Test func aBulletPointTextOver66CharactersIsRefused() throws {
        let folder = try CatalogueFolder()
        try folder.write("star.png", RetentionPNG.make(width: 1024, height: 1024))
        #expect(
            try folder.codes(
                """
                      - name: m
                        header: h
                        body: b
                        bulletPoints:
                          - { text: "\(String(repeating: "t", count: 67))", image: star.png, altText: star }
                """
            ) == ["bullet_point_text_too_long"]
        )
    }

    @Test func aHeaderAboveAnImageNeedsAnImage() throws {
        #expect(try codes(text: "header: h\n        body: b\n        headerPosition: ABOVE_IMAGE") == ["above_image_requires_image"])
    }

    @Test func onlyATextMessageCarriesAnImage() throws {
        let folder = try CatalogueFolder()
        try folder.write("hero.png", RetentionPNG.make(width: 3840, height: 400))
        let policy = try folder.policy(
            messages: """
                      - name: with-image
                        header: h
                        body: b
                        image: hero.png
                        altText: a picture
                """,
            entries: """
                          - alternateProduct: com.example.yearly
                            message: with-image
                """,
            defaults: nil
        )
        #expect(RetentionCatalogueCheck.problems(in: policy).map(\.code) == ["image_not_allowed"])
    }

    @Test func aTransparentImageIsRefused() throws {
        let folder = try CatalogueFolder()
        try folder.write("alpha.png", RetentionPNG.make(width: 3840, height: 400, colourType: 6))
        try folder.write("trns.png", RetentionPNG.make(width: 3840, height: 400, transparencyChunk: true))
        #expect(
            try folder.codes(
                """
                      - name: m1
                        header: h
                        body: b
                        image: alpha.png
                        altText: a
                      - name: m2
                        header: h
                        body: b
                        image: trns.png
                        altText: a
                """
            ) == ["invalid_image", "invalid_image"]
        )
    }

    @Test func aFullSizeImageIs3840WideAnd160To2160High() throws {
        let folder = try CatalogueFolder()
        let sizes = [(3839, 400), (3840, 159), (3840, 2161), (3840, 160), (3840, 2160)]
        var messages: [String] = []
        for (index, size) in sizes.enumerated() {
            try folder.write("full\(index).png", RetentionPNG.make(width: size.0, height: size.1))
            messages.append("      - { name: m\(index), header: h, body: b, image: full\(index).png, altText: a }")
        }
        let problems = RetentionCatalogueCheck.problems(
            in: try folder.policy(messages: messages.joined(separator: "\n"), entries: nil, defaults: nil)
        )
        #expect(problems.map(\.code) == ["invalid_image", "invalid_image", "invalid_image"])
        #expect(problems[0].message.contains("3839 × 400"))
    }

    @Test func aBulletPointImageIs1024By1024() throws {
        let folder = try CatalogueFolder()
        try folder.write("wide.png", RetentionPNG.make(width: 1024, height: 1023))
        #expect(
            try folder.codes(
                """
                      - name: m
                        header: h
                        body: b
                        bulletPoints:
                          - { text: point, image: wide.png, altText: star }
                """
            ) == ["invalid_image"]
        )
    }

    @Test func atMost2000MessagesAnApp() throws {
        let messages = (0...2000).map { "      - { name: m\($0), header: h, body: \"body \($0)\" }" }.joined(separator: "\n")
        #expect(try CatalogueFolder().codes(messages) == ["limit_reached"])
    }

    @Test func atMost2000ImagesAnApp() throws {
        let folder = try CatalogueFolder()
        var messages: [String] = []
        for index in 0..<1001 {  // 1,001 messages, each with a full-size image and a bullet image of its own: 2,002 images
            try folder.write("full\(index).png", RetentionPNG.make(width: 3840, height: 160 + index))
            try folder.write("bullet\(index).png", RetentionPNG.make(width: 1024, height: 1024, text: "\(index)"))
            messages.append(
                """
                      - { name: m\(index), header: h, body: b, image: full\(index).png, altText: a, bulletPoints: \
                [{ text: t, image: bullet\(index).png, altText: a }] }
                """
            )
        }
        #expect(try folder.codes(messages.joined(separator: "\n")) == ["limit_reached"])
    }

    @Test func aDefaultNamesAMessageOfItsLocaleAndAValidLocale() throws {
        let folder = try CatalogueFolder()
        let messages = "      - { name: m, locale: en-US, header: h, body: b }"
        #expect(
            RetentionCatalogueCheck.problems(in: try folder.policy(messages: messages, entries: nil, defaults: "fr-FR: m")).map(\.code) == [
                "invalid_locale"
            ]
        )
        #expect(
            RetentionCatalogueCheck.problems(in: try folder.policy(messages: messages, entries: nil, defaults: "\"e n\": m")).map(\.code)
                == ["invalid_locale", "invalid_locale"]
        )
        #expect(throws: PolicyError.self) { try folder.policy(messages: messages, entries: nil, defaults: "en-US: unknown") }
        #expect(throws: PolicyError.self) { try folder.policy(messages: messages, entries: "          - message: unknown", defaults: nil) }
    }

    @Test func anImageNeedsThePolicyFile() throws {
        let text = try CatalogueFolder.text(
            messages: "      - { name: m, header: h, body: b, image: hero.png, altText: a }",
            entries: nil,
            defaults: nil
        )
        #expect(throws: PolicyError.self) { try OfferPolicy(text: text) }
    }

    private func codes(text: String) throws -> [String] {
        try CatalogueFolder().codes("      - name: m\n        \(text)")
    }
}

/// A folder with a policy file and its image files.
struct CatalogueFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("catalogue-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func write(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: url.appendingPathComponent(name))
    }

    /// The policy file with `messages` (YAML list items, indented by 6), `entries` (the monthly product's retention
    /// entries, indented by 10) and `defaults` (its retentionDefaults, one line), read from the folder.
    func policy(messages: String, entries: String?, defaults: String?) throws -> OfferPolicy {
        let file = url.appendingPathComponent("policy.yaml")
        try Data(Self.text(messages: messages, entries: entries, defaults: defaults).utf8).write(to: file)
        return try OfferPolicy(contentsOf: file.path)
    }

    func codes(_ messages: String) throws -> [String] {
        RetentionCatalogueCheck.problems(in: try policy(messages: messages, entries: nil, defaults: nil)).map(\.code)
    }

    static func text(messages: String, entries: String?, defaults: String?) throws -> String {
        """
        apps:
          - bundleIdentifier: com.example.app
            appAppleId: 1234567890
            retentionMessages:
        \(messages)
            products:
              - productIdentifier: com.example.monthly
                subscriptionGroupIdentifier: "21000001"
                offers:
                  - offerIdentifier: half_price
        \(defaults.map { "        retentionDefaults: { \($0) }" } ?? "")
        \(entries.map { "        retention:\n\($0)" } ?? "")
              - productIdentifier: com.example.yearly
                subscriptionGroupIdentifier: "21000001"

        """
    }
}

/// PNG files of a given size and colour type (the header chunks Apple's checks read; the image data is a stub).
enum RetentionPNG {
    static func make(width: Int, height: Int, colourType: UInt8 = 2, transparencyChunk: Bool = false, text: String? = nil) -> [UInt8] {
        func be32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xFF) } }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] { be32(data.count) + Array(type.utf8) + data + [0, 0, 0, 0] }
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        bytes += chunk("IHDR", be32(width) + be32(height) + [8, colourType, 0, 0, 0])
        if let text { bytes += chunk("tEXt", Array("Comment\0\(text)".utf8)) }
        if transparencyChunk { bytes += chunk("tRNS", [0]) }
        bytes += chunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])
        bytes += chunk("IEND", [])
        return bytes
    }
}
