import Foundation
import Logging
import OfferSignerServer
import Testing

/// The configuration table of docs/configuration.md and the variables the code reads (``ConfigurationVariable``)
/// are the same set: a variable cannot be added, renamed or removed without the table following.
@Suite struct ConfigurationTableTests {
    /// The variable names in the first column of the table under `## Variables` in docs/configuration.md.
    static func documentedVariables() throws -> Set<String> {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs").appendingPathComponent("configuration.md")
        let text = try String(contentsOf: page, encoding: .utf8)
        let section = try #require(text.components(separatedBy: "\n## Variables\n").dropFirst().first?.components(separatedBy: "\n## ").first)
        var names: Set<String> = []
        for line in section.split(separator: "\n") where line.hasPrefix("| `") {
            let firstColumn = line.split(separator: "|", omittingEmptySubsequences: true).first ?? ""
            for part in firstColumn.split(separator: "`") where part.allSatisfy({ $0.isUppercase || $0 == "_" || $0.isNumber }) && !part.isEmpty {
                names.insert(String(part))
            }
        }
        return names
    }

    @Test func theConfigurationTableListsExactlyTheVariablesTheCodeReads() throws {
        let documented = try Self.documentedVariables()
        let read = Set(ConfigurationVariable.allCases.map(\.environmentName))
        #expect(!documented.isEmpty)
        for name in read.subtracting(documented).sorted() {
            Issue.record("\(name) is read but not in the configuration table of docs/configuration.md")
        }
        for name in documented.subtracting(read).sorted() {
            Issue.record("\(name) is in the configuration table of docs/configuration.md but nothing reads it")
        }
    }

    @Test func environmentNamesFollowSwiftConfigurationsMapping() {
        #expect(ConfigurationVariable.bundleIdentifier.environmentName == "OFFER_SIGNER_BUNDLE_ID")
        #expect(ConfigurationVariable.databaseUrl.environmentName == "OFFER_SIGNER_DATABASE_URL")
        #expect(ConfigurationVariable.logLevel.environmentName == "LOG_LEVEL")
        let reader = ConfigurationVariable.reader(["OFFER_SIGNER_MAX_CONNECTIONS": "12", "LOG_LEVEL": "debug"])
        #expect(reader.string(.maxConnections) == "12")
        #expect(reader.string(.logLevel) == "debug")
    }

    /// The Swift files of `Sources`, by path relative to the repository.
    static func sourceFiles() throws -> [(path: String, text: String)] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources")
        let enumerator = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var files: [(path: String, text: String)] = []
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            files.append((String(url.path.dropFirst(root.path.count + 1)), try String(contentsOf: url, encoding: .utf8)))
        }
        return files.sorted { $0.path < $1.path }
    }

    @Test func onlyTheConfigurationReadsTheProcessEnvironment() throws {
        let files = try Self.sourceFiles()
        #expect(!files.isEmpty)
        for file in files where !file.path.hasSuffix("Configuration/ConfigurationVariable.swift") {
            for (number, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains("processInfo.environment") || line.contains("getenv(") {
                Issue.record("\(file.path):\(number + 1) reads the process environment; use ConfigurationVariable.processEnvironment")
            }
        }
    }

    /// Variable names are written once, in ``ConfigurationVariable``: the server's and the command line's code
    /// interpolate them (`\(variable: .bundleIdentifier)`). Doc comments (and openapi.yaml) are prose; the lower targets
    /// (keys, store, signing, the application) cannot see ``ConfigurationVariable`` and keep their own words.
    @Test func theServerAndTheCommandLineSpellNoVariableName() throws {
        let files = try Self.sourceFiles().filter {
            ($0.path.hasPrefix("Sources/OfferSignerServer/") || $0.path.hasPrefix("Sources/offer-signer/"))
                && !$0.path.hasSuffix("Configuration/ConfigurationVariable.swift")
        }
        #expect(!files.isEmpty)
        let names = ConfigurationVariable.allCases.map(\.environmentName) + [ConfigurationVariable.environmentPrefix]
        for file in files {
            for (number, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                for name in names where line.contains(name) {
                    Issue.record("\(file.path):\(number + 1) spells \(name); interpolate \\(variable: …) instead")
                }
            }
        }
    }

    @Test func anUnknownLogLevelIsAConfigurationError() {
        #expect(throws: ConfigurationError.self) { try configuredLogLevel(["LOG_LEVEL": "verbose"]) }
        #expect((try? configuredLogLevel(["LOG_LEVEL": "DEBUG"])) == .debug)
        #expect((try? configuredLogLevel([:])) == .info)
    }
}
