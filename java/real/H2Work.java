import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;

/** H2Work: an embedded H2 database (Debian's libh2-java) under a JDBC
 *  workload: inserts through prepared statements, indexed and scanning
 *  selects, a join and a grouping, repeated ROUNDS times. A real program
 *  made of many small methods, for the benchmark's overhead rows.
 *  Usage: H2Work [rows] [rounds]; prints a checksum. */
public class H2Work {
    public static void main(String[] args) throws Exception {
        int rows = args.length > 0 ? Integer.parseInt(args[0]) : 20000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        long sum = 0;
        try (Connection c = DriverManager.getConnection("jdbc:h2:mem:bench;DB_CLOSE_DELAY=-1", "sa", "")) {
            for (int r = 0; r < rounds; r++)
                sum += round(c, rows, r);
        }
        System.out.println("h2work: " + sum);
    }

    static long round(Connection c, int rows, int r) throws Exception {
        long sum = 0;
        try (Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS orders");
            s.execute("DROP TABLE IF EXISTS customers");
            s.execute("CREATE TABLE customers(id INT PRIMARY KEY, name VARCHAR(40), region INT)");
            s.execute("CREATE TABLE orders(id INT PRIMARY KEY, customer INT, amount DECIMAL(10,2), note VARCHAR(80))");
            s.execute("CREATE INDEX orders_customer ON orders(customer)");
        }
        int customers = rows / 10;
        try (PreparedStatement p = c.prepareStatement("INSERT INTO customers VALUES(?, ?, ?)")) {
            for (int i = 0; i < customers; i++) {
                p.setInt(1, i);
                p.setString(2, "customer-" + i);
                p.setInt(3, i % 7);
                p.executeUpdate();
            }
        }
        try (PreparedStatement p = c.prepareStatement("INSERT INTO orders VALUES(?, ?, ?, ?)")) {
            for (int i = 0; i < rows; i++) {
                p.setInt(1, i);
                p.setInt(2, (i * 7919) % customers);
                p.setBigDecimal(3, java.math.BigDecimal.valueOf((i * 37 + r) % 10000, 2));
                p.setString(4, "order " + i + " of round " + r);
                p.executeUpdate();
            }
        }
        try (PreparedStatement p = c.prepareStatement("SELECT amount FROM orders WHERE customer = ?")) {
            for (int i = 0; i < customers; i += 3) {
                p.setInt(1, i);
                try (ResultSet rs = p.executeQuery()) {
                    while (rs.next())
                        sum += rs.getBigDecimal(1).unscaledValue().longValue();
                }
            }
        }
        try (Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT c.region, COUNT(*), SUM(o.amount) FROM orders o JOIN customers c ON o.customer = c.id GROUP BY c.region ORDER BY c.region")) {
                while (rs.next())
                    sum += rs.getInt(1) * 1000L + rs.getLong(2) + rs.getBigDecimal(3).longValue();
            }
            try (ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM orders WHERE note LIKE '%7 of%'")) {
                while (rs.next())
                    sum += rs.getLong(1);
            }
        }
        return sum;
    }
}
