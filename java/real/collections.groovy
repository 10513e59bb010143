// collections.groovy: a collections-heavy Groovy script (Debian's groovy)
// for the benchmark's overhead rows: closures over lists and maps,
// grouping, sorting and string building, all through Groovy's dynamic
// dispatch. Usage: groovy collections.groovy [n] [rounds]; prints a checksum.
int n = args.length > 0 ? args[0] as int : 40000
int rounds = args.length > 1 ? args[1] as int : 3
long sum = 0
rounds.times { r ->
    def people = (0..<n).collect { i -> [id: i, name: "p${i}", age: (i * 31 + r) % 90, city: "c${i % 17}"] }
    def byCity = people.groupBy { it.city }
    def avg = byCity.collectEntries { city, ps -> [city, ps.sum { it.age } / ps.size()] }
    def adults = people.findAll { it.age >= 18 }.sort { a, b -> a.age <=> b.age ?: a.id <=> b.id }
    def names = adults.take(1000).collect { it.name.toUpperCase() }.join(',')
    def counts = [:].withDefault { 0 }
    people.each { counts[it.age % 10] += 1 }
    sum += avg.values().sum().longValue() + adults.size() + names.length() + counts.values().sum()
    sum += people.inject(0L) { acc, p -> acc + p.id % 13 }
}
println "collections: ${sum}"
