/// Test keys made with the openssl command line (throw-away keys, never used anywhere else).
/// `pkcs8P256` and `sec1P256` are the same key; `publicKeyP256` is its public half.
enum KeyFixtures {
    /// `openssl pkey -in p8.pem -pubout -outform DER | sha256sum`
    static let fingerprintP256 = "8d7dabe2447dad0347b1d42dbc243b8fde4197c633ae0d291644b574dae7000a"
    static let pkcs8P256 = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg9nxAnytmEPEsPZYl
        H6KFsphP+6raNckCqZFMFvuft0uhRANCAASMB3H56Dvp7ipWsBl6Ar7aBRJFMmvX
        W0dl5MPwIWK7G7xjrDG7er5844PGcZ6IZSjW1IJj1TACiiw1Hc164XGb
        -----END PRIVATE KEY-----
        """
    static let sec1P256 = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIPZ8QJ8rZhDxLD2WJR+ihbKYT/uq2jXJAqmRTBb7n7dLoAoGCCqGSM49
        AwEHoUQDQgAEjAdx+eg76e4qVrAZegK+2gUSRTJr11tHZeTD8CFiuxu8Y6wxu3q+
        fOODxnGeiGUo1tSCY9UwAoosNR3NeuFxmw==
        -----END EC PRIVATE KEY-----
        """
    static let publicKeyP256 = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEjAdx+eg76e4qVrAZegK+2gUSRTJr
        11tHZeTD8CFiuxu8Y6wxu3q+fOODxnGeiGUo1tSCY9UwAoosNR3NeuFxmw==
        -----END PUBLIC KEY-----
        """
    static let pkcs8P384 = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDBMR2r9r2a4NM/P8mAV
        frfDMj7NzQLExpuv4c7NHrZmyyJFpPf3KunNYpjl/csLdpKhZANiAASFyDAzPYjg
        6oHr79hBIFHzlXopqfSfgDOhaUYM1Y7inwtTui3x8xQakNPUfCEBw9Tdaq5168D0
        41AN/S7vABGet2go7GEdibPFFMDfnlodDLKfhHwdZG/sNygXuFJ8uxY=
        -----END PRIVATE KEY-----
        """
    static let pkcs8RSA = """
        -----BEGIN PRIVATE KEY-----
        MIICdwIBADANBgkqhkiG9w0BAQEFAASCAmEwggJdAgEAAoGBAMQQ+D7HS9GXPB0X
        n/Mc+ns1yT94g56XBaVpi7LvmWIKjh4RzlX9KHNd4Om3A8aCTzSwvuQHseiCXKqB
        OJ2zS62q5vaf0WwzHgqagKWXCzBdiie3hSYVuWGxpnNAelXgAnQB9aLtc223buiN
        a0eR8biFlEEhoTyYpQHahsADJ2ztAgMBAAECgYBl+9G0jePBJGJPW5+GTHd5qTOC
        AUStNC7qqGjS7VAiMA1WVLq3/ZOR1q4Lw3eCRPvAE4Nnhx0iLNTYl5iEZuOgioC7
        BuuwwT0pwip45bZJJJSZV62s7odwylpyB5u9IQQQaK7cQ8KgVEoTg5QeauArAyrs
        MDKY/7iVc2WEJXW/XQJBAPoCU5VIIAEf+qL6yNu+WF+1ZKokJjtJBqa0YFW2bpH5
        JPllfoVwb5eLZjkSwl1vfAnLctPS32VF8tg6U1WVBacCQQDIw7uQKNRsOUMEBmBN
        F9k1iGsYj5AVhdidagB1KguxAYaCiNISe+JPHzxTfg/GbxJ8iS45oQa1XFyAlTKN
        fbNLAkAl+Oh9CgFialsFGhYb2iNOFhz+ApOT+Zl7BHaFTjopDbBh+NpophUs7U1P
        adv/mQk765y7M5Ierase0G0L2KCNAkEAgO5yvhn6kaYUi7ksj1YJgH+jh5prBed3
        PWCd+qCN8ZbxM1N61bQJmpaMv3Ht35nlXWUb8pafIEm4fjtSw9s+EQJBAOddw0EU
        KSUyo4BdYPgjAC08Q5IeZ3oHeCk3yLPzNEnt/k8H3OEhlwJZtgAQWZiZrfXUTvnb
        gRkcgwVLxltLTQ4=
        -----END PRIVATE KEY-----
        """
    static let encryptedPKCS8 = """
        -----BEGIN ENCRYPTED PRIVATE KEY-----
        MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAhFjPG0k2XzIAICCAAw
        DAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEEPsJRVor4B7mRbNSeJkZPF4EgZB9
        yCP1ZBGVeOIdmoCuumnkVhQN57Zme8xe55BgfxL3ttwX+QxOmbFHpC82U9SK6qQ7
        EVf6b/jsVIGrCMeajIfFeIXHiBLxPOAA2H3IeNszmnkKrgwUzNaiK2axVi8Cd8AG
        2MoqVdaaPf2NK3bd/DAOzze7DvViEJhQw0gLRnWeMKhY3Fm6fvEc/hCZBH1XBJE=
        -----END ENCRYPTED PRIVATE KEY-----
        """
    static let pkcs8Ed25519 = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VwBCIEIMxIs4ZhaiI4HCU6XUY+KKW1gkvxIXPoxPExfw/C2lNP
        -----END PRIVATE KEY-----
        """
}
