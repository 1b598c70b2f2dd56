module inl

go 1.26
