"""Builds examples/shop.db, the small sample database the README demo asks questions about.

Deterministic: the same file every run. ``python examples/make_shop.py`` rewrites it.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

CUSTOMERS = [
    ("Ana Souza", "Brazil", "São Paulo"), ("Bruno Lima", "Brazil", "Rio de Janeiro"),
    ("Carla Dias", "Brazil", "Recife"), ("Dieter Braun", "Germany", "Berlin"),
    ("Eva Schmidt", "Germany", "Munich"), ("Frank Miller", "USA", "Chicago"),
    ("Grace Lee", "USA", "Seattle"), ("Hiro Tanaka", "Japan", "Osaka"),
    ("Ines Garcia", "Spain", "Madrid"), ("Jules Martin", "France", "Lyon"),
    ("Kofi Mensah", "Ghana", "Accra"), ("Lena Novak", "Czech Republic", "Prague"),
]
PRODUCTS = [
    ("Espresso beans 1kg", "coffee", 24.50), ("Filter coffee 500g", "coffee", 11.90),
    ("Green tea 100g", "tea", 7.25), ("Earl Grey 250g", "tea", 9.80),
    ("Ceramic mug", "accessories", 14.00), ("Pour-over kettle", "accessories", 49.00),
    ("Hand grinder", "accessories", 59.90), ("Decaf beans 1kg", "coffee", 26.00),
]


def build(path: Path) -> None:
    path.unlink(missing_ok=True)
    rng = random.Random(7)
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL,
                                city TEXT, joined_on DATE NOT NULL);
        CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,
                               price REAL NOT NULL);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                             ordered_on DATE NOT NULL, status TEXT NOT NULL);
        CREATE TABLE order_items (order_id INTEGER NOT NULL REFERENCES orders(id),
                                  product_id INTEGER NOT NULL REFERENCES products(id),
                                  quantity INTEGER NOT NULL, PRIMARY KEY (order_id, product_id));
        """
    )
    for i, (name, country, city) in enumerate(CUSTOMERS, start=1):
        db.execute("INSERT INTO customers VALUES (?, ?, ?, ?, ?)",
                   (i, name, country, city, f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"))
    db.executemany("INSERT INTO products VALUES (?, ?, ?, ?)",
                   [(i, *p) for i, p in enumerate(PRODUCTS, start=1)])
    for order_id in range(1, 61):
        status = rng.choice(["shipped", "shipped", "shipped", "delivered", "cancelled"])
        day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        db.execute("INSERT INTO orders VALUES (?, ?, ?, ?)",
                   (order_id, rng.randint(1, len(CUSTOMERS)), day, status))
        for product_id in rng.sample(range(1, len(PRODUCTS) + 1), rng.randint(1, 3)):
            db.execute("INSERT INTO order_items VALUES (?, ?, ?)", (order_id, product_id, rng.randint(1, 4)))
    db.commit()
    db.close()


if __name__ == "__main__":
    build(Path(__file__).with_name("shop.db"))
