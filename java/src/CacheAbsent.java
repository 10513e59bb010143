/** CacheAbsent: left out of TestBCICacheDeepChain's jar (CacheChain.rare). */
class CacheAbsent {
    static int get(int a) {
        return a;
    }
}
