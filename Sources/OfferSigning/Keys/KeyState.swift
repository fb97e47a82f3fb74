/// Where a key stands in its life.
///
/// - `active`: signs new offers (one per app).
/// - `retired`: no longer signs new offers; signatures it made still verify.
/// - `revoked`: compromised; it neither signs nor verifies as valid.
public enum KeyState: String, Sendable, Hashable, Codable, CaseIterable {
    case active
    case retired
    case revoked
}
