import Foundation
import OfferSigning

/// Reads subscription keys from the places docs/design.md §3 names:
///
/// | variable | meaning |
/// |---|---|
/// | `OFFER_SIGNER_KEY_<KEYID>` | a PEM private key, inline |
/// | `OFFER_SIGNER_KEY_<KEYID>_FILE` | path to a PEM/.p8 file |
/// | `OFFER_SIGNER_KEYS_DIR` | a folder of `SubscriptionKey_<KEYID>.p8` files |
///
/// All or nothing: one bad key fails the whole load with a ``ConfigurationError`` naming its key identifier
/// and source, so a half-loaded key set never serves.
public enum KeyLoader {
    /// The environment variable prefix of inline keys and key files.
    public static let keyPrefix = ConfigurationVariable.keyPrefix
    /// The environment variable of the key folder.
    public static let directoryVariable = ConfigurationVariable.keysDir.environmentName

    /// Loads every key the environment names.
    /// - Parameters:
    ///   - environment: the process environment (or a test's).
    ///   - now: the load time recorded on each entry.
    /// - Returns: the keys, with their sources; possibly empty.
    /// - Throws: ``ConfigurationError`` for an unreadable file, an invalid key, a key identifier defined twice
    ///   with different keys, or a key variable without a key identifier (`OFFER_SIGNER_KEY_FILE`, which would
    ///   otherwise be read as the key `FILE`).
    public static func load(environment: [String: String], now: Date = Date()) throws(ConfigurationError) -> [KeyRing.Entry] {
        var entries: [KeyRing.Entry] = []
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) where name.hasPrefix(keyPrefix) {
            var keyIdentifier = String(name.dropFirst(keyPrefix.count))
            let suffix = ConfigurationVariable.keyFileSuffix
            guard !keyIdentifier.isEmpty, keyIdentifier != suffix, keyIdentifier != String(suffix.dropFirst()) else {
                // Never the value: it may be a PEM.
                throw ConfigurationError(
                    .invalidConfiguration,
                    "\(name) names no key ID. For a key file, use \(ConfigurationVariable.keyFileVariable("<KEYID>")) (for example "
                        + "\(ConfigurationVariable.keyFileVariable("ABC123DEFG"))=/path/to/SubscriptionKey_ABC123DEFG.p8); for a PEM inline, "
                        + "\(ConfigurationVariable.keyVariable("<KEYID>")); for a folder of key files, \(variable: .keysDir)."
                )
            }
            if keyIdentifier.hasSuffix(ConfigurationVariable.keyFileSuffix) {
                keyIdentifier.removeLast(ConfigurationVariable.keyFileSuffix.count)
                guard !value.trimmingCharacters(in: .whitespaces).isEmpty else {
                    throw ConfigurationError(.invalidConfiguration, "\(name) is set but empty: give the path of the key's .p8 file, or unset it.")
                }
                let pem = try readFile(atPath: value, keyIdentifier: keyIdentifier)
                entries.append(try entry(keyIdentifier, pem, source: "file \(value) (\(name))", now: now))
            } else {
                entries.append(try entry(keyIdentifier, value, source: "environment \(name)", now: now))
            }
        }
        if let directory = ConfigurationVariable.reader(environment).string(.keysDir) {
            entries += try loadDirectory(directory, now: now)
        }
        return entries
    }

    /// Loads the `SubscriptionKey_<KEYID>.p8` files of a folder. Hidden entries (a Kubernetes Secret volume's
    /// `..data` and `..2024_…` folders) are skipped; the visible names, which are symlinks into `..data`, are read.
    public static func loadDirectory(_ directory: String, now: Date = Date()) throws(ConfigurationError) -> [KeyRing.Entry] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw ConfigurationError(
                .invalidConfiguration,
                """
                \(directoryVariable)=\(directory) cannot be read: \(describe(error)). Point it at the folder holding your \
                SubscriptionKey_<KEYID>.p8 files.
                """
            )
        }
        var entries: [KeyRing.Entry] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            guard let keyIdentifier = keyIdentifier(fromFileName: name) else { continue }
            let path = (directory as NSString).appendingPathComponent(name)
            let pem = try readFile(atPath: path, keyIdentifier: keyIdentifier)
            entries.append(try entry(keyIdentifier, pem, source: "file \(path)", now: now))
        }
        return entries
    }

    /// The key identifier of an App Store Connect key file name, `SubscriptionKey_<KEYID>.p8`, or `nil`.
    public static func keyIdentifier(fromFileName name: String) -> String? {
        guard name.hasPrefix("SubscriptionKey_"), name.hasSuffix(".p8") else { return nil }
        let keyIdentifier = String(name.dropFirst("SubscriptionKey_".count).dropLast(".p8".count))
        return keyIdentifier.isEmpty ? nil : keyIdentifier
    }

    private static func entry(_ keyIdentifier: String, _ pem: String, source: String, now: Date) throws(ConfigurationError) -> KeyRing.Entry {
        do {
            return KeyRing.Entry(
                key: try SigningKey(keyIdentifier: keyIdentifier, pemRepresentation: pem, source: source),
                source: source,
                loadedAt: now
            )
        } catch {
            throw ConfigurationError(.invalidConfiguration, error.message)
        }
    }

    private static func readFile(atPath path: String, keyIdentifier: String) throws(ConfigurationError) -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError(.invalidConfiguration, "Key \(keyIdentifier): cannot read \(path): \(describe(error)).")
        }
    }

    private static func describe(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        switch nsError.code {
        case NSFileReadNoSuchFileError: return "no such file or folder"
        case NSFileReadNoPermissionError: return "permission denied"
        case NSFileReadInapplicableStringEncodingError: return "not a text file"
        case NSFileReadUnknownError: return "it is a folder, or not a regular file"  // Foundation's code 256
        default: return "it cannot be read (Foundation's code \(nsError.code))"
        }
    }
}
