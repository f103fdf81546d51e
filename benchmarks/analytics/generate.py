"""The analytics question set's four databases, built from a fixed seed: the same rows on every run.

``retail`` (customers, products, orders, order items), ``hr`` (departments, employees, leave requests),
``dining`` (restaurants, inspections, reviews) and ``saas`` (plans, accounts, subscriptions, invoices): a few
thousand rows each, dates in 2022-2024, money with cents, counts stored as integers (so that a division of two
counts is integer division on SQLite and PostgreSQL), and text stored in mixed case where a question asks to
match it without case.

``build(folder)`` writes them in the layout of the Spider harness (``verifiedsql/bench/engines.py``):
``database/<db>/<db>.sqlite`` and ``postgres/<db>.sql`` (a schema of the database's name, its rows, then its
foreign keys). Run ``python benchmarks/analytics/generate.py FOLDER`` to write them by hand; ``verifiedsql bench
analytics`` builds them itself.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

SEED = 37
START, END = dt.date(2022, 1, 1), dt.date(2024, 12, 31)


@dataclass(frozen=True)
class Column:
    name: str
    sqlite: str  # the declared type on SQLite
    postgres: str  # the type on PostgreSQL


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    foreign_keys: tuple[tuple[str, str, str], ...] = ()  # (column, referenced table, referenced column)


def _int(name: str) -> Column:
    return Column(name, "INTEGER", "INTEGER")


def _text(name: str) -> Column:
    return Column(name, "TEXT", "TEXT")


def _date(name: str) -> Column:
    return Column(name, "DATE", "DATE")


def _money(name: str) -> Column:
    return Column(name, "REAL", "NUMERIC(12, 2)")


Rows = dict[str, list[tuple[Any, ...]]]


def _day(rng: random.Random, start: dt.date = START, end: dt.date = END) -> dt.date:
    return start + dt.timedelta(days=rng.randrange((end - start).days + 1))


def _retail(rng: random.Random) -> tuple[list[Table], Rows]:
    tables = [
        Table("customers", (_int("customer_id"), _text("name"), _text("city"), _text("segment"), _date("signup_date")),
              ("customer_id",)),
        Table("products", (_int("product_id"), _text("name"), _text("category"), _money("list_price")),
              ("product_id",)),
        Table("orders", (_int("order_id"), _int("customer_id"), _date("order_date"), _date("ship_date"),
                         _text("status"), _text("channel")),
              ("order_id",), (("customer_id", "customers", "customer_id"),)),
        Table("order_items", (_int("order_id"), _int("product_id"), _int("quantity"), _money("unit_price")),
              ("order_id", "product_id"),
              (("order_id", "orders", "order_id"), ("product_id", "products", "product_id"))),
    ]
    # a city is sometimes typed in another case, as data entered by hand is
    cities = ["Lyon", "Porto", "Leeds", "Graz", "Utrecht", "Bergen"]
    customers = []
    for i in range(1, 241):
        city = rng.choice(cities)
        city = rng.choice([city, city, city, city.lower(), city.upper()])
        customers.append((i, f"Customer {i:03d}", city, rng.choice(["consumer", "consumer", "business"]),
                          _day(rng, dt.date(2021, 1, 1), dt.date(2024, 6, 30)).isoformat()))
    categories = {"Books": (8, 40), "Garden": (15, 120), "Toys": (5, 60), "Kitchen": (10, 200), "Sports": (12, 150)}
    products = []
    for i in range(1, 51):
        category = rng.choice(sorted(categories))
        low, high = categories[category]
        products.append((i, f"{category[:-1] if category.endswith('s') else category} item {i:02d}", category,
                         round(rng.uniform(low, high), 2)))
    orders, items = [], []
    for i in range(1, 1801):
        customer = rng.choice(customers)
        signed_up = dt.date.fromisoformat(customer[4])
        ordered = _day(rng, max(START, signed_up), END)
        status = rng.choices(["delivered", "shipped", "cancelled", "returned"], [70, 10, 12, 8])[0]
        shipped = None if status == "cancelled" else ordered + dt.timedelta(days=rng.choice([0, 1, 1, 2, 2, 3, 4,
                                                                                              5, 7, 9]))
        orders.append((i, customer[0], ordered.isoformat(), shipped and shipped.isoformat(), status,
                       rng.choices(["web", "store", "phone"], [60, 30, 10])[0]))
        for product in rng.sample(products, rng.randint(1, 4)):
            price = round(product[3] * rng.choice([1.0, 1.0, 1.0, 0.9, 0.8]), 2)
            items.append((i, product[0], rng.randint(1, 5), price))
    return tables, {"customers": customers, "products": products, "orders": orders, "order_items": items}


def _hr(rng: random.Random) -> tuple[list[Table], Rows]:
    tables = [
        Table("departments", (_int("department_id"), _text("name"), _text("location")), ("department_id",)),
        Table("employees", (_int("employee_id"), _text("full_name"), _int("department_id"), _text("job_title"),
                            _date("hire_date"), _date("termination_date"), _int("salary"), _text("gender"),
                            _int("is_remote")),
              ("employee_id",), (("department_id", "departments", "department_id"),)),
        Table("leave_requests", (_int("request_id"), _int("employee_id"), _date("start_date"), _date("end_date"),
                                 _text("leave_type"), _text("status")),
              ("request_id",), (("employee_id", "employees", "employee_id"),)),
    ]
    names = ["Engineering", "Sales", "Marketing", "Finance", "Support", "Legal"]
    departments = [(i, name, rng.choice(["Oslo", "Madrid", "Vienna"])) for i, name in enumerate(names, 1)]
    titles = ["Analyst", "Engineer", "Manager", "Specialist", "Associate"]
    employees = []
    for i in range(1, 301):
        hired = _day(rng, dt.date(2015, 1, 1), dt.date(2024, 6, 30))
        left = _day(rng, hired + dt.timedelta(days=30), END) if rng.random() < 0.25 else None
        employees.append((i, f"Employee {i:03d}", rng.choices(range(1, 7), [30, 20, 12, 10, 20, 8])[0],
                          rng.choice(titles), hired.isoformat(), left and left.isoformat(),
                          rng.randrange(38_000, 140_000, 500), rng.choice(["F", "M"]), int(rng.random() < 0.3)))
    requests = []
    for i in range(1, 901):
        employee = rng.choice(employees)
        start = _day(rng, dt.date(2023, 1, 1), dt.date(2024, 12, 20))
        kind = rng.choices(["vacation", "sick", "parental"], [70, 25, 5])[0]
        length = {"vacation": rng.randint(1, 15), "sick": rng.randint(1, 5), "parental": rng.randint(20, 60)}[kind]
        requests.append((i, employee[0], start.isoformat(), (start + dt.timedelta(days=length - 1)).isoformat(),
                         kind, rng.choices(["approved", "rejected", "pending"], [75, 15, 10])[0]))
    return tables, {"departments": departments, "employees": employees, "leave_requests": requests}


def _dining(rng: random.Random) -> tuple[list[Table], Rows]:
    tables = [
        Table("restaurants", (_int("restaurant_id"), _text("name"), _text("city"), _text("cuisine"),
                              Column("rating", "REAL", "NUMERIC(2, 1)"), _int("price_level"), _date("opened_on")),
              ("restaurant_id",)),
        Table("inspections", (_int("inspection_id"), _int("restaurant_id"), _date("inspected_on"), _int("score"),
                              _text("result")),
              ("inspection_id",), (("restaurant_id", "restaurants", "restaurant_id"),)),
        Table("reviews", (_int("review_id"), _int("restaurant_id"), _text("reviewer"), _int("stars"),
                          _date("posted_on")),
              ("review_id",), (("restaurant_id", "restaurants", "restaurant_id"),)),
    ]
    cuisines = ["Italian", "Thai", "Mexican", "Indian", "French", "Japanese", "Vegan"]
    restaurants = []
    for i in range(1, 161):
        cuisine = rng.choice(cuisines)
        # cuisines are typed in any case, as owners enter them
        cuisine = rng.choice([cuisine, cuisine, cuisine.lower(), cuisine.upper()])
        restaurants.append((i, f"Restaurant {i:03d}", rng.choice(["Austin", "Denver", "Boston", "Seattle"]), cuisine,
                            round(rng.triangular(2.5, 5.0, 4.2), 1), rng.randint(1, 4),
                            _day(rng, dt.date(2010, 1, 1), dt.date(2023, 12, 31)).isoformat()))
    inspections = []
    for i in range(1, 641):
        restaurant = rng.choice(restaurants)
        score = rng.randint(55, 100)
        result = "pass" if score >= 80 else rng.choice(["fail", "conditional"])
        inspections.append((i, restaurant[0], _day(rng).isoformat(), score, result))
    reviews = []
    for i in range(1, 1201):
        restaurant = rng.choice(restaurants)
        stars = max(1, min(5, round(rng.gauss(float(restaurant[4]), 1.0))))
        reviews.append((i, restaurant[0], f"user{rng.randint(1, 400)}", stars, _day(rng).isoformat()))
    return tables, {"restaurants": restaurants, "inspections": inspections, "reviews": reviews}


def _saas(rng: random.Random) -> tuple[list[Table], Rows]:
    tables = [
        Table("plans", (_int("plan_id"), _text("name"), _money("monthly_fee")), ("plan_id",)),
        Table("accounts", (_int("account_id"), _text("company"), _text("country"), _date("created_on")),
              ("account_id",)),
        Table("subscriptions", (_int("subscription_id"), _int("account_id"), _int("plan_id"), _date("started_on"),
                                _date("cancelled_on")),
              ("subscription_id",), (("account_id", "accounts", "account_id"), ("plan_id", "plans", "plan_id"))),
        Table("invoices", (_int("invoice_id"), _int("subscription_id"), _date("issued_on"), _money("amount"),
                           _int("paid")),
              ("invoice_id",), (("subscription_id", "subscriptions", "subscription_id"),)),
    ]
    plans = [(1, "Basic", 19.0), (2, "Pro", 49.0), (3, "Team", 99.0), (4, "Enterprise", 299.0)]
    accounts = [(i, f"Company {i:03d}", rng.choice(["US", "DE", "FR", "GB", "BR", "JP"]),
                 _day(rng, START, dt.date(2024, 9, 30)).isoformat()) for i in range(1, 201)]
    subscriptions: list[tuple[Any, ...]] = []
    invoices: list[tuple[Any, ...]] = []
    for account in accounts:
        created = dt.date.fromisoformat(account[3])
        for _ in range(rng.choice([1, 1, 1, 2])):
            plan = rng.choices(plans, [40, 35, 18, 7])[0]
            started = _day(rng, created, min(END, created + dt.timedelta(days=200)))
            cancelled = _day(rng, started + dt.timedelta(days=20), END) if rng.random() < 0.35 else None
            subscription_id = len(subscriptions) + 1
            subscriptions.append((subscription_id, account[0], plan[0], started.isoformat(),
                                  cancelled and cancelled.isoformat()))
            issued = started
            while issued <= (cancelled or END):
                invoices.append((len(invoices) + 1, subscription_id, issued.isoformat(), plan[2],
                                 int(rng.random() < 0.92)))
                issued = (issued.replace(day=1) + dt.timedelta(days=32)).replace(day=min(issued.day, 28))
    return tables, {"plans": plans, "accounts": accounts, "subscriptions": subscriptions, "invoices": invoices}


DATABASES: dict[str, Callable[[random.Random], tuple[list[Table], Rows]]] = {
    "retail": _retail, "hr": _hr, "dining": _dining, "saas": _saas}


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _write_sqlite(path: Path, tables: list[Table], rows: Rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        for table in tables:
            columns = [f"{c.name} {c.sqlite}" for c in table.columns]
            columns.append(f"PRIMARY KEY ({', '.join(table.primary_key)})")
            columns += [f"FOREIGN KEY ({column}) REFERENCES {target} ({key})"
                        for column, target, key in table.foreign_keys]
            db.execute(f"CREATE TABLE {table.name} ({', '.join(columns)})")
            db.executemany(f"INSERT INTO {table.name} VALUES ({', '.join('?' * len(table.columns))})",
                           rows[table.name])
    sqlite3.connect(path).close()


def _postgres_dump(db_id: str, tables: list[Table], rows: Rows) -> str:
    lines = [f"-- The {db_id} database of the analytics question set (benchmarks/analytics/generate.py)", "",
             f"CREATE SCHEMA IF NOT EXISTS {db_id};", ""]
    for table in tables:
        columns = [f"    {c.name} {c.postgres}" for c in table.columns]
        columns.append(f"    PRIMARY KEY ({', '.join(table.primary_key)})")
        lines += [f"CREATE TABLE {db_id}.{table.name} (", ",\n".join(columns), ");", ""]
    for table in tables:
        names = ", ".join(c.name for c in table.columns)
        values = ",\n".join(f"    ({', '.join(_literal(v) for v in row)})" for row in rows[table.name])
        lines += [f"INSERT INTO {db_id}.{table.name} ({names}) VALUES", values + ";", ""]
    lines.append("-- Foreign key constraints (added after data load)")
    for table in tables:
        for n, (column, target, key) in enumerate(table.foreign_keys):
            lines.append(f"ALTER TABLE {db_id}.{table.name} ADD CONSTRAINT fk_{table.name}_{n} FOREIGN KEY "
                         f"({column}) REFERENCES {db_id}.{target} ({key});")
    return "\n".join(lines) + "\n"


def build(folder: Path) -> Path:
    """Write every database into ``folder`` (SQLite files and PostgreSQL dumps) and return it."""
    folder = Path(folder)
    for db_id, make in DATABASES.items():
        tables, rows = make(random.Random(f"{SEED}-{db_id}"))
        _write_sqlite(folder / "database" / db_id / f"{db_id}.sqlite", tables, rows)
        dump = folder / "postgres" / f"{db_id}.sql"
        dump.parent.mkdir(parents=True, exist_ok=True)
        dump.write_text(_postgres_dump(db_id, tables, rows), "utf-8")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("folder", type=Path, help="where to write database/ and postgres/")
    print(build(parser.parse_args().folder))


if __name__ == "__main__":
    main()
